"""Writes for agent profiles: saving one, judged on the stored row's owner."""

from __future__ import annotations

import os

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from agents.models import AgentProfile
from agents.providers.factory import operator_url
from agents.signals import profile_changed

# What a room that uses a profile is told about when its creator changes it: what the
# agent is told, which model and server get the room's work, with what key and tools.
FIELDS_A_ROOM_IS_TOLD_OF = (
    ("role_prompt", "its prompt"),
    ("model", "its model"),
    ("fallback_models", "its fallback models"),
    ("base_url", "the server it sends work to"),
    ("api_key", "its API key"),
    ("allowed_tools", "its tools"),
    ("record_requests", "whether its requests are recorded"),
)


def check_can_edit_profile(profile: AgentProfile, user: AbstractBaseUser) -> None:
    """A profile belongs to its creator; staff may manage all. Others may use it in their
    rooms, but not change where it sends a room's work, nor its key."""
    if getattr(user, "is_staff", False):
        return
    if profile.created_by_id is None or profile.created_by_id != user.pk:
        raise PermissionDenied(f"Only the person who created {profile.name} (or staff) can change it; "
                                  "you can still use it in your rooms.")


@transaction.atomic
def agent_profile_save(*, profile: AgentProfile, actor: AbstractBaseUser) -> AgentProfile:
    """Create ``profile`` (``actor`` becomes its owner) or save changes to it.

    Ownership is judged on the stored row, under its lock, not on the edited copy: a
    form cannot hand a profile to its editor.
    """
    if profile.pk is None:
        if profile.created_by_id is None or not getattr(actor, "is_staff", False):
            profile.created_by = actor
        stored = None
    else:
        stored = AgentProfile.objects.select_for_update().get(pk=profile.pk)
        check_can_edit_profile(stored, actor)
        if not getattr(actor, "is_staff", False):
            profile.created_by_id = stored.created_by_id
    profile.full_clean()
    profile.save()
    if stored is not None and (changes := profile_changes(stored, profile)):
        profile_changed.send(sender=AgentProfile, profile=profile, actor=actor, changes=changes)
    return profile


def profile_changes(before: AgentProfile, after: AgentProfile) -> tuple[str, ...]:
    """What changed between two versions of a profile that rooms using it are told of."""
    return tuple(words for field, words in FIELDS_A_ROOM_IS_TOLD_OF
                 if getattr(before, field) != getattr(after, field))


def creator_deleted(user: AbstractBaseUser) -> None:
    """A deleted account's profiles stop spending it. A profile without a creator is the
    operator's to share (rooms.own_key): its own key and server would be anyone's then,
    so they are cleared (it runs on the hub's keys) and the rooms using it are told."""
    for profile in AgentProfile.objects.filter(created_by=user).exclude(api_key="", base_url=""):
        before = AgentProfile(api_key=profile.api_key, base_url=profile.base_url)
        profile.api_key = ""
        if not operator_url(profile.base_url, os.environ):  # the operator's server stays
            profile.base_url = ""
        if (profile.api_key, profile.base_url) == (before.api_key, before.base_url):
            continue
        profile.save(update_fields=["api_key", "base_url"])
        changes = tuple(words for field, words in FIELDS_A_ROOM_IS_TOLD_OF
                        if field in ("api_key", "base_url") and getattr(before, field) != getattr(profile, field))
        profile_changed.send(sender=AgentProfile, profile=profile, actor=None, changes=changes)
