"""Writes for agent profiles: saving one, judged on the stored row's owner."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from agents.models import AgentProfile


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
    else:
        stored = AgentProfile.objects.select_for_update().get(pk=profile.pk)
        check_can_edit_profile(stored, actor)
        if not getattr(actor, "is_staff", False):
            profile.created_by_id = stored.created_by_id
    profile.full_clean()
    profile.save()
    return profile
