"""Intent files: a task's objective, prerequisites, definition of done and the
person's constraints, verbatim, committed to the room repository before the first
tool call and re-read at every cycle start. The file is authoritative."""

from __future__ import annotations

from pathlib import Path

from hub.git import git
from hub.repo_lock import room_repo_lock


def intent_relpath(task_id: int) -> str:
    return f".atrium/tasks/{task_id}/intent.md"


def render_intent(*, task_id: int, title: str, objective: str, prerequisites: str,
                  definition_of_done: str, constraints: str) -> str:
    def section(heading: str, body: str) -> str:
        return f"## {heading}\n{body.strip() or '(none given)'}\n"

    return "\n".join([
        f"# Task {task_id}: {title.strip()}\n",
        section("Objective", objective),
        section("Prerequisites", prerequisites),
        section("Definition of done", definition_of_done),
        # Not stripped or reflowed: the person's words exactly as typed.
        "## Constraints (the person's own words)\n" + (constraints if constraints.strip() else "(none given)") + "\n",
    ])


def intent_write(*, repo_path: Path | str, task_id: int, text: str, author: str = "") -> bool:
    """Write and commit the intent file on the room's main checkout.

    Returns False when the file already had exactly this text (nothing committed).
    """
    repo = Path(repo_path)
    relpath = intent_relpath(task_id)
    with room_repo_lock(repo):
        path = repo / relpath
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git("add", "--", relpath, cwd=repo)
        who = f" by {author}" if author else ""
        git("commit", "-q", "-m", f"Intent of task {task_id}{who}", "--", relpath, cwd=repo)
    return True


def intent_read(*, repo_path: Path | str, task_id: int) -> str | None:
    path = Path(repo_path) / intent_relpath(task_id)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
