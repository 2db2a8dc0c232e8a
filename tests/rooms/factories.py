"""Build people, agents and rooms through the same services the hub uses."""

from __future__ import annotations

import itertools
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from agents.models import AgentProfile
from rooms.models import Membership, Room
from rooms.repository.git import git
from rooms.repository.prepare import RepositorySource
from rooms.services import agent_assign, membership_add, room_create

_numbers = itertools.count(1)


def make_user(username: str | None = None, password: str | None = None) -> AbstractBaseUser:
    """A person; without ``password`` they can only be logged in with force_login
    (hashing a real password costs most of a second)."""
    return get_user_model().objects.create_user(username=username or f"person{next(_numbers)}", password=password)


def make_agent(name: str | None = None, model: str = "replay:demo.jsonl", *,
               owner: AbstractBaseUser | None = None, **fields) -> AgentProfile:
    return AgentProfile.objects.create(name=name or f"agent{next(_numbers)}", model=model, created_by=owner, **fields)


def make_room(
    owner: AbstractBaseUser,
    name: str | None = None,
    *,
    members: list[AbstractBaseUser] = (),
    viewers: list[AbstractBaseUser] = (),
    agents: list[AgentProfile] = (),
    source: RepositorySource | None = None,
) -> Room:
    room = room_create(owner=owner, name=name or f"Room {next(_numbers)}", source=source)
    for user in members:
        membership_add(room=room, actor=owner, username=user.get_username(), role=Membership.Role.MEMBER)
    for user in viewers:
        membership_add(room=room, actor=owner, username=user.get_username(), role=Membership.Role.VIEWER)
    for agent in agents:
        agent_assign(room=room, actor=owner, agent=agent)
    room.refresh_from_db()
    return room


def make_git_repo(path: Path, *, branch: str = "main", files: dict[str, str] | None = None) -> Path:
    """A real local repository with one commit holding ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--initial-branch", branch, cwd=path)
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", "--all", cwd=path)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "first", cwd=path)
    return path
