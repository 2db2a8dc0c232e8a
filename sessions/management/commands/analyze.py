"""``manage.py analyze <session>``: what an agent did in one session and what it cost."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.table import Table

from sessions.analysis.selectors import session_facts
from sessions.analysis.trace import analyze


class Command(BaseCommand):
    help = "Trace analysis of a session: steps, calls, tokens, cost, re-reads, repeated commands, tests, phases."

    def add_arguments(self, parser) -> None:
        parser.add_argument("session_id", type=int)
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, session_id: int, **options) -> None:
        session = session_by_id(session_id)
        facts = session_facts(session)
        analysis = analyze(facts)
        if options["json"]:
            self.stdout.write(json.dumps({"session": session.pk, **analysis.to_dict()}, indent=2, sort_keys=True))
            return
        table = Table(title=f"Session {session.pk}: {facts.title} ({facts.agent}, {facts.state})", show_header=False)
        table.add_column("figure", style="bold")
        table.add_column("value")
        for label, value in analysis.rows():
            table.add_row(label, value)
        for item in analysis.reread_ranges:
            table.add_row("  re-read", f"{_range(item)} ×{item['reads']}")
        for item in analysis.commands_repeated:
            table.add_row("  repeated", f"{item['command']} ×{item['runs']} ({item['failed']} failed)")
        Console(file=self.stdout, width=120, no_color=True).print(table)




def session_by_id(session_id: int):
    from sessions.models import Session

    session = Session.objects.select_related("agent", "task", "task__room").filter(pk=session_id).first()
    if session is None:
        raise CommandError(f"no session {session_id}")
    return session


def _range(item: dict) -> str:
    if item["start"] is None and item["end"] is None:
        return item["path"]
    return f"{item['path']}:{item['start'] or 1}-{item['end'] if item['end'] is not None else 'end'}"
