"""Codex CLI, from its npm package and unmodified (a provider entry in its config.toml is
all it is told), runs a fix-the-test task end to end through the gateway's Responses
API: its own process, its own tools (``exec_command`` runs real shell commands in the
working copy), the room's gateway key, and the upstream a scripted ``openai:`` agent (the
local wire-protocol server). Besides the provider entry, its config turns off what would
reach the internet and has nothing to do with the gateway (the update check, analytics,
the sync of OpenAI's plugin marketplace, a git clone from GitHub): this machine has none.

Codex is not the hub's: ``.ci/run`` installs the version pinned in
``.ci/codex/package-lock.json`` into ``.ci/codex``; ``ATRIUM_CODEX`` names another
``codex``. Without it the test is skipped, except in CI
(``ATRIUM_REQUIRE_REAL_SERVICES=1``), where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from endpoint.models import GatewayConversation
from sessions.models import Observation, Session
from tests.endpoint.conftest import streamed_answer
from tests.endpoint.outside_clients import installed, no_way_out
from tests.endpoint.test_sessions import completion
from tests.rooms.factories import make_git_repo

pytestmark = pytest.mark.timeout(180)

PATH = "/v1/chat/completions"
REPO_ROOT = Path(__file__).resolve().parents[2]
CODEX = Path(os.environ.get("ATRIUM_CODEX") or REPO_ROOT / ".ci" / "codex" / "node_modules" / ".bin" / "codex")

TASK = "check.py fails: mean() in calc.py gives the wrong average. Fix calc.py."
BUG, FIX = "return sum(values) / (len(values) - 1)", "return sum(values) / len(values)"
CALC = f'def mean(values):\n    """The arithmetic mean of values."""\n    {BUG}\n'
CHECK = "from calc import mean\n\nassert mean([1, 2, 3]) == 2, mean([1, 2, 3])\nprint('mean ok')\n"
# The model's turns: a thought and one call of Codex's exec_command tool, then the answer.
TURNS = [
    ("Let me read calc.py.", "cat calc.py"),
    ("Run the check.", "python3 check.py"),
    ("mean() divides by len - 1; it must divide by len.", f"sed -i 's|{BUG}|{FIX}|' calc.py"),
    ("Run the check again.", "python3 check.py"),
]
DONE = "Fixed: mean() now divides by len(values); check.py passes."
CONFIG = """model = "gpt-5-codex"
model_provider = "atrium"
check_for_update_on_startup = false

[model_providers.atrium]
name = "Atrium"
base_url = "{url}/v1"
env_key = "ATRIUM_GATEWAY_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
"""


@pytest.fixture
def codex() -> Path:
    """The ``codex`` command; checked before the hub starts."""
    return installed(CODEX, f"Codex CLI is not installed at {CODEX} (.ci/run installs it; ATRIUM_CODEX names another)")


def turn(n: int, thought: str, command: str) -> dict:
    return completion(text=thought, call=("exec_command", {"cmd": command}), n=n)


def test_codex_cli_runs_a_task_end_to_end_through_the_gateway(codex, setup, wire, hub, tmp_path):
    work = make_git_repo(tmp_path / "work", files={"calc.py": CALC, "check.py": CHECK})
    for n, (thought, command) in enumerate(TURNS, 1):
        wire.stream(PATH, streamed_answer(turn(n, thought, command)))
    wire.stream(PATH, streamed_answer(completion(text=DONE, n=len(TURNS) + 1)))
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG.format(url=hub.url))

    with no_way_out() as proxies:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(home), "LANG": "C.UTF-8",
               "ATRIUM_GATEWAY_KEY": setup.openai_key, **proxies}

        def run(task: str) -> subprocess.CompletedProcess:
            return subprocess.run([str(codex), "exec", "--dangerously-bypass-approvals-and-sandbox", task], cwd=work,
                                  env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=150)

        done = run(TASK)
        # A second run in the same folder starts like the first (instructions, tools, its
        # environment note): a session of its own all the same.
        wire.stream(PATH, streamed_answer(completion(text="Nothing else to do.", n=len(TURNS) + 2)))
        again = run("Anything else?")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert DONE in done.stdout
    assert FIX in (work / "calc.py").read_text()  # its own tool really changed the file
    assert subprocess.run(["python3", "check.py"], cwd=work, capture_output=True).returncode == 0

    assert again.returncode == 0 and "Nothing else to do." in again.stdout, again.stderr[-3000:]

    upstream = [r.json for r in wire.requests_to(PATH)][:-1]
    assert len(upstream) == len(TURNS) + 1
    assert all(r["model"] == "gpt-4.1" for r in upstream)  # the profile's model, not Codex's
    assert all(r["stream"] is True for r in upstream)  # streamed from the upstream, piece by piece
    assert "exec_command" in [t["function"]["name"] for t in upstream[0]["tools"]]
    outputs = [m["content"] for m in upstream[-1]["messages"] if m["role"] == "tool"]
    assert len(outputs) == len(TURNS) and "mean ok" in outputs[-1]  # the last check, as Codex reported it

    session, second = Session.objects.filter(origin=Session.Origin.ENDPOINT).order_by("pk")
    assert session.agent.name == "gpt" and session.task.objective == TASK
    assert second.task.objective == "Anything else?"
    assert GatewayConversation.objects.get(session=session).requests == len(TURNS) + 1
    observations = list(Observation.objects.filter(session=session).order_by("seq"))
    assert [o.tool for o in observations] == ["exec_command"] * len(TURNS)
    assert [json.loads(o.purpose.split(" ", 1)[1])["cmd"] for o in observations] == [c for _, c in TURNS]
