"""Reads for agent profiles: who may edit one."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from agents.models import AgentProfile


def can_edit_profile(user: AbstractBaseUser | AnonymousUser, profile: AgentProfile) -> bool:
    """Its creator and staff; everyone else only uses it."""
    return user.is_authenticated and (user.is_staff or profile.created_by_id == user.pk)


def access_profile_for_edit(user: AbstractBaseUser | AnonymousUser, agent_id: int) -> AgentProfile:
    """The profile to edit: 404 if there is none, 403 (with the reason) if it is not the user's."""
    profile = AgentProfile.objects.filter(pk=agent_id).first()
    if profile is None:
        raise Http404("No such agent.")
    if not can_edit_profile(user, profile):
        raise PermissionDenied(f"Only the person who created {profile.name} (or staff) can change it; "
                               "you can still use it in your rooms.")
    return profile
