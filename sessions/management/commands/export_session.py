"""Export a session as ``*.atrium.json``, a trajectory `manage.py replay` reads."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from observations.replay.readers import write_atrium
from sessions.export import session_trajectory
from sessions.ledger.state_store import session_gateway_state
from sessions.models import Session


class Command(BaseCommand):
    help = "Write a session's recorded trajectory (tool results, steps, token counts) as JSON."

    def add_arguments(self, parser) -> None:
        parser.add_argument("session_id", type=int)
        parser.add_argument("--out", help="file to write (default: session-<id>.atrium.json)")

    def handle(self, *args, session_id: int, out: str | None, **options) -> None:
        session = Session.objects.select_related("agent", "task", "task__room").filter(pk=session_id).first()
        if session is None:
            raise CommandError(f"no session {session_id}")
        if not session_gateway_state(session):
            raise CommandError(f"session {session_id} has not started: nothing to export")
        target = Path(out or f"session-{session_id}.atrium.json")
        if not target.name.endswith(".atrium.json"):
            raise CommandError("the file name must end in .atrium.json (that is how replay recognises it)")
        trajectory = session_trajectory(session)
        write_atrium(trajectory, target)
        self.stdout.write(f"wrote {target}: {len(trajectory.steps)} steps, {len(trajectory.events)} tool calls")
