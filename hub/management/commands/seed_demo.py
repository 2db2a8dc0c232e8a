"""Create or refresh the demo: a user ``demo`` with a fresh password and a room "Demo"
whose repository starts from hub/demo_repo (a small library with one real bug).

Idempotent: running it again keeps the room and its history and only resets the
password. Each step is a function of the ``Demo`` it builds on, so later features
(a replay agent, a first task) add a step to ``STEPS``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand

from rooms.models import Membership, Room
from rooms.repo import TemplateRepository
from rooms.services import room_create

DEMO_USERNAME = "demo"
DEMO_ROOM_NAME = "Demo"
DEMO_REPO_TEMPLATE = Path(__file__).resolve().parents[2] / "demo_repo"
DEMO_CHECK_COMMAND = "python -m pytest -q"


@dataclass
class Demo:
    user: AbstractBaseUser | None = None
    password: str = ""
    room: Room | None = None
    notes: list[str] = field(default_factory=list)


def ensure_user(demo: Demo) -> None:
    user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
    demo.password = secrets.token_urlsafe(9)
    user.set_password(demo.password)
    # The demo person may open the admin too, to see every model the hub keeps.
    user.is_staff = user.is_superuser = True
    user.save()
    demo.user = user
    demo.notes.append("created user demo" if created else "reset the password of user demo")


def ensure_room(demo: Demo) -> None:
    room = Room.objects.filter(owner=demo.user, name=DEMO_ROOM_NAME).order_by("pk").first()
    if room is None:
        room = room_create(
            owner=demo.user,
            name=DEMO_ROOM_NAME,
            source=TemplateRepository(DEMO_REPO_TEMPLATE),
            check_command=DEMO_CHECK_COMMAND,
        )
        demo.notes.append(f"created room {room.name} with its repository at {room.repo_path}")
    else:
        Membership.objects.update_or_create(
            room=room, user=demo.user, defaults={"role": Membership.Role.OWNER}
        )
        if room.check_command != DEMO_CHECK_COMMAND:
            room.check_command = DEMO_CHECK_COMMAND
            room.save(update_fields=["check_command"])
        demo.notes.append(f"kept room {room.name}")
    demo.room = room


STEPS: list[Callable[[Demo], None]] = [ensure_user, ensure_room]


class Command(BaseCommand):
    help = "Create or refresh the demo user and the Demo room (safe to run again)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="Where the hub is served, for the printout."
        )

    def handle(self, *args, url: str, **options) -> None:
        demo = Demo()
        for step in STEPS:
            step(demo)
        for note in demo.notes:
            self.stdout.write(f"demo: {note}")
        room_url = url.rstrip("/") + f"/rooms/{demo.room.slug}/"
        self.stdout.write(
            self.style.SUCCESS(
                f"\n  Open {url}  and log in as  {DEMO_USERNAME} / {demo.password}\n"
                f"  The demo room: {room_url}\n"
            )
        )
