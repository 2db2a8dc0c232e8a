"""What a handoff will need to know of the work so far: the files the session read and
wrote (with the symbols seen there), and its latest verification lines. Noted as results
and the agent's bodies come in, kept across segments."""

from __future__ import annotations

from observations.gateway.handoff import FileNote, is_check_command, symbols_in
from observations.gateway.payloads import PayloadSpec
from observations.gateway.transcript import ObservationInput

MAX_CHECKS = 8  # verification lines a handoff can show
# A payload that is a file's whole new text (payloads._describe_key, a heredoc's body).
WHOLE_BODIES = frozenset({"file body", "heredoc body"})


class WorkNotes:
    def __init__(self) -> None:
        self.files: dict[str, FileNote] = {}
        self.checks: list[str] = []
        self.touched: set[str] = set()  # noted apart from a result or a body, since the state was last recorded

    def file(self, path: str) -> FileNote:
        note = self.files.get(path)
        if note is None:
            note = self.files[path] = FileNote(path)
        return note

    def add_check(self, line: str) -> None:
        """A verification line (the room's check, a test command) for the next handoff."""
        self.checks = (self.checks + [line])[-MAX_CHECKS:]

    def result(self, source: ObservationInput, step: int, obs_id: int = -1) -> None:
        """A tool result: the range it read, the files it wrote, the check it ran."""
        if source.read is not None and not source.read.path.startswith("recall:"):
            rng = source.read  # a recalled text is not a file of the worktree
            lines = "" if rng.start is None and rng.end is None else f"{rng.start or 1}-{rng.end or 'end'}"
            note = self.file(rng.path)
            note.note_read(lines, symbols_in(source.text), step)
            note.newest_read, note.bodies = obs_id, []
        for path in source.written:
            self.file(path).note_write([], step)
        if source.exit_code is not None:
            command = str(source.arguments.get("command", "")) if isinstance(source.arguments, dict) else ""
            if is_check_command(command):
                self.add_check(f"- step {step}: `{_one_line(command)}` → exit {source.exit_code}")

    def wrote(self, paths: list[str], step: int) -> None:
        """Files written apart from any result (a job, seen when it ended)."""
        for path in paths:
            self.file(path).note_write([], step)
        self.touched.update(paths)

    def body(self, spec: PayloadSpec, step: int, pid: int = -1) -> None:
        """A body the agent wrote for a file (a payload with a path)."""
        if spec.path:
            note = self.file(spec.path)
            note.note_write(symbols_in(spec.text), step)
            note.bodies = [pid] if spec.what in WHOLE_BODIES else [*note.bodies, pid]


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
