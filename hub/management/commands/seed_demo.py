"""Create or refresh the demo: a user ``demo`` with a password of its own and a room "Demo"
whose repository starts from hub/demo_repo (a small library with one real bug), an
agent "Demo fixer" on the built-in replay model (no API key needed), a rule that lets it
run the tests, and, the first time only, a task "Fix median for even-length input" with
a session started for it. The first worker that comes up runs it through the loop a
person takes part in: it reads a sample text too large to keep (its small window folds
it away), runs the tests, asks in the chat and waits for an answer (a steer point), then
waits on the approval card of its edit, verifies and merges. A second recorded agent,
"Repo explorer (recorded)", is offered to every room: it works on any Python repository.

Idempotent: running it again keeps the room, its tasks and history, and the password
(kept in the data folder; ``--new-password`` sets a new one). ``--again`` instead starts over in a fresh Demo room (the original bug
back, a new task and session): the replay fixer plays a recording, which only makes
sense on the code it was recorded on. Each step is a function of the ``Demo`` it
builds on; later features add a step to ``STEPS``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand

from agents.models import AgentProfile
from observations.gateway.policies import ON_DEMAND
from observations.gateway.prices import price_for
from rooms.models import Membership, Room, RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule, Decision, Session, Task
from sessions.runtime import states
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create

DEMO_USERNAME = "demo"
DEMO_ROOM_NAME = "Demo"
DEMO_REPO_TEMPLATE = Path(__file__).resolve().parents[2] / "demo_repo"
# unittest, not pytest: the check runs on the hub's interpreter, and a production install
# carries no test tools.
DEMO_TEST_COMMAND = "python -m unittest"
DEMO_CHECK_COMMAND = f"{DEMO_TEST_COMMAND} -q"
DEMO_AGENT_NAME = "Demo fixer"
DEMO_AGENT_MODEL = "replay:demo-tour.json"
# A window small enough that the sample text the tour reads is folded away a step later.
DEMO_AGENT_LIMITS = {"context_window": 8_192, "output_budget": 2_400}
# What hubs seeded by an earlier version gave the demo agent: moved to the tour (a model
# someone chose since is theirs to keep).
EARLIER_DEMO_MODELS = {"replay:demo-fix-median.json"}
DEMO_PRICED_AS = "anthropic:claude-sonnet-4-5"
# A keyless agent for a newcomer's own room: its recording fits any Python repository.
EXPLORER_NAME = "Repo explorer (recorded)"
EXPLORER_MODEL = "replay:explore-python-repo.json"
# (tool, path glob, command prefix); every other tool keeps the read-only default, so the
# fixer's edit waits on a person's approval card.
DEMO_RULES = (
    ("shell", "", DEMO_TEST_COMMAND),
)
DEMO_TASK = {
    "title": "Fix median for even-length input",
    "objective": "median() returns the upper middle value for an even number of values; "
                 "make it return the mean of the two middle values.",
    "definition_of_done": f"`{DEMO_CHECK_COMMAND}` passes.",
    "prerequisites": "Read textstats.py and test_textstats.py first.",
    "constraints": "Don't change the tests.",
}


@dataclass
class Demo:
    user: AbstractBaseUser | None = None
    password: str = ""
    room: Room | None = None
    agent: AgentProfile | None = None
    session: Session | None = None
    again: bool = False  # a fresh room, even if a Demo room exists
    new_password: bool = False  # a new password, even if one is kept
    notes: list[str] = field(default_factory=list)


def demo_prices() -> dict:
    """The recorded demo model is priced as the model it stands in for, so its session
    page shows what such a run costs (the profile's own prices, editable)."""
    prices = price_for(DEMO_PRICED_AS).per_million() or {}
    return {f"price_{name}": value for name, value in prices.items()}


def ensure_user(demo: Demo) -> None:
    """The demo user, with the password kept in the data folder: the same across restarts
    (a new one would log every open browser out), a new one only when asked."""
    user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
    kept = _kept_password()
    if kept and not demo.new_password and user.check_password(kept):
        demo.password = kept
        note = "kept the password of user demo"
    else:
        demo.password = secrets.token_urlsafe(9)
        user.set_password(demo.password)
        _keep_password(demo.password)
        note = "created user demo" if created else "set a new password for user demo"
    # The demo person may open the admin too, to see every model the hub keeps.
    user.is_staff = user.is_superuser = True
    user.save()
    demo.user = user
    demo.notes.append(note)


def _password_file() -> Path:
    return Path(settings.DATA_DIR) / "demo-password"


def _kept_password() -> str:
    try:
        return _password_file().read_text().strip()
    except OSError:
        return ""


def _keep_password(password: str) -> None:
    path = _password_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(".demo-password.tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    os.replace(path.with_name(".demo-password.tmp"), path)


def ensure_room(demo: Demo) -> None:
    room = None if demo.again else Room.objects.filter(owner=demo.user, name=DEMO_ROOM_NAME).order_by("pk").first()
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


def recorded_agent(demo: Demo, name: str, model: str, role_prompt: str, **limits: int) -> tuple[AgentProfile, bool]:
    """The agent profile ``name`` on a recording, created with these defaults the first time."""
    return AgentProfile.objects.get_or_create(name=name, defaults={
        "model": model, **limits, "eviction_policy": ON_DEMAND, "role_prompt": role_prompt,
        "created_by": demo.user, **demo_prices(),
    })


def ensure_agent(demo: Demo) -> None:
    agent, created = recorded_agent(
        demo, DEMO_AGENT_NAME, DEMO_AGENT_MODEL,
        "You fix small bugs: read the code and its tests, run them, make the smallest fix.", **DEMO_AGENT_LIMITS)
    # A replay plays by turn number: a session still running the earlier one keeps it.
    if agent.model in EARLIER_DEMO_MODELS and not agent.sessions.filter(state__in=states.ACTIVE).exists():
        agent.model = DEMO_AGENT_MODEL
        for limit, value in DEMO_AGENT_LIMITS.items():
            setattr(agent, limit, value)
        agent.save(update_fields=["model", *DEMO_AGENT_LIMITS])
        # The earlier demo let it edit Python files unasked; the tour's edit waits on a card.
        ApprovalRule.objects.filter(room__owner=demo.user, tool="edit_file", path_glob="*.py", command_prefix="",
                                    decision=Decision.ALLOW, created_by=demo.user).delete()
        demo.notes.append(f"moved agent {agent.name} to {DEMO_AGENT_MODEL}")
    _, assigned = RoomAgent.objects.get_or_create(room=demo.room, agent=agent, defaults={"added_by": demo.user})
    demo.agent = agent
    if created or assigned:
        demo.notes.append(f"assigned agent {agent.name} ({agent.model}) to room {demo.room.name}")


def ensure_explorer(demo: Demo) -> None:
    """Offered to every room (it is not assigned to the demo's): it lists the files,
    searches the definitions, runs the tests (on an approval card, unless a rule allows
    it) and says so in the chat, whatever the repository."""
    _, created = recorded_agent(
        demo, EXPLORER_NAME, EXPLORER_MODEL, "You look around a repository and run its tests; you change nothing.",
        context_window=32_000, output_budget=2_000)
    if created:
        demo.notes.append(f"created agent {EXPLORER_NAME} ({EXPLORER_MODEL}) for any room")


def ensure_rules(demo: Demo) -> None:
    for tool, path_glob, command_prefix in DEMO_RULES:
        ApprovalRule.objects.get_or_create(
            room=demo.room, tool=tool, path_glob=path_glob, command_prefix=command_prefix, decision=Decision.ALLOW,
            defaults={"created_by": demo.user},
        )


def ensure_first_task(demo: Demo) -> None:
    """The first time only: the task and a session for it, queued for the first worker."""
    task = Task.objects.filter(room=demo.room, title=DEMO_TASK["title"]).order_by("pk").first()
    if task is None:
        task = task_create(room=demo.room, actor=demo.user, **DEMO_TASK)
        demo.session = session_start(task=task, agent=demo.agent, actor=demo.user)
        demo.notes.append(f"created task “{task.title}” and queued {demo.agent.name} on it")
    else:
        demo.session = Session.objects.filter(task=task).order_by("-created_at", "-pk").first()
        demo.notes.append(f"kept task “{task.title}”")


STEPS: list[Callable[[Demo], None]] = [
    ensure_user, ensure_room, ensure_agent, ensure_explorer, ensure_rules, ensure_first_task]


class Command(BaseCommand):
    help = "Create or refresh the demo user and the Demo room (safe to run again)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="Where the hub is served, for the printout."
        )
        parser.add_argument("--again", action="store_true",
                            help="Start over in a fresh Demo room with the original bug, to watch the fix again.")
        parser.add_argument("--new-password", action="store_true",
                            help="Give the demo user a new password (it is kept across restarts otherwise).")

    def handle(self, *args, url: str, again: bool = False, new_password: bool = False, **options) -> None:
        demo = Demo(again=again, new_password=new_password)
        for step in STEPS:
            step(demo)
        for note in demo.notes:
            self.stdout.write(f"demo: {note}")
        base = url.rstrip("/")
        lines = [
            f"  Open {url}  and log in as  {DEMO_USERNAME} / {demo.password}",
            f"  The demo room: {base}/rooms/{demo.room.slug}/",
        ]
        if demo.session is not None:
            lines += [
                f"  Watch {demo.agent.name} fix the bug: {base}/sessions/{demo.session.pk}/",
                f"  Its observation ledger: {base}/sessions/{demo.session.pk}/ledger/",
            ]
        lines.append(f"  No API key? Assign {EXPLORER_NAME} in a room of your own: it works on any Python repository.")
        self.stdout.write(self.style.SUCCESS("\n" + "\n".join(lines) + "\n"))
