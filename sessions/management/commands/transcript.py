"""``manage.py transcript <session>``: a session as readable Markdown."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sessions.analysis.selectors import session_facts
from sessions.analysis.transcript import render_transcript
from sessions.management.commands.analyze import session_by_id


class Command(BaseCommand):
    help = "Write a session as Markdown: messages, replies, tool calls with short results, folds, verify lines."

    def add_arguments(self, parser) -> None:
        parser.add_argument("session_id", type=int)
        parser.add_argument("--out", help="file to write (default: standard output)")

    def handle(self, *args, session_id: int, out: str | None = None, **options) -> None:
        text = render_transcript(session_facts(session_by_id(session_id)))
        if out is None:
            self.stdout.write(text, ending="")
            return
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stdout.write(f"wrote {out}")
