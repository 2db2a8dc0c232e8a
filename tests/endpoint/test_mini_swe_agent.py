"""A real agent nobody here wrote, mini-swe-agent from its package, runs a task end to end
through the gateway: its own process (the ``mini`` command of its own virtualenv, as a
user installs it), its own LocalEnvironment running real shell commands in a git
working copy, litellm calling the hub's ``/v1`` with the room's gateway key, and the
upstream a recording of the model's turns (the local wire-protocol server).

mini-swe-agent and its dependencies (litellm, textual, datasets, ...) are not the
hub's: ``.ci/run`` installs the pinned set (``.ci/mini-swe-agent.lock``) into
``.ci/mini-swe-agent-venv``; ``ATRIUM_MINI_SWE_AGENT_VENV`` names another. Without it
the test is skipped, except in CI (``ATRIUM_REQUIRE_REAL_SERVICES=1``), where it fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import AgentProfile
from endpoint.models import GatewayConversation
from sessions.models import Observation, Session, SessionEvent
from sessions.runtime import states
from sessions.selectors import session_files_touched
from tests.agents.providers.wire_server import Reply, WireServer
from tests.rooms.factories import make_git_repo

pytestmark = pytest.mark.timeout(180)

PATH = "/v1/chat/completions"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("ATRIUM_MINI_SWE_AGENT_VENV") or REPO_ROOT / ".ci" / "mini-swe-agent-venv")
MINI = VENV / "bin" / "mini"
REQUIRE = os.environ.get("ATRIUM_REQUIRE_REAL_SERVICES") == "1"

TASK = "check.py fails: mean() in calc.py gives the wrong average. Fix calc.py."
BUG, FIX = "return sum(values) / (len(values) - 1)", "return sum(values) / len(values)"
# A module long enough that two of its reads and the notes do not fit the small window
# below, short enough that mini-swe-agent shows it whole (it elides past 10,000 chars).
CALC = "".join(
    f'def scale_{n:03d}(x):\n    """x scaled by {n}, for table {n % 7}."""\n    return x * {n}\n\n\n'
    for n in range(48)
) + f'def mean(values):\n    """The arithmetic mean of values."""\n    {BUG}\n'
NOTES = "".join(f"- Note {n}: every scale_ function returns x times its number; keep them pure.\n"
                for n in range(75))
API = "".join(f"scale_{n:03d}(x) -> float: multiplies x by {n}; see calc.py line {5 * n + 1}.\n"
              for n in range(45))
CHECK = "from calc import mean\n\nassert mean([1, 2, 3]) == 2, mean([1, 2, 3])\nprint('mean ok')\n"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"

# The model's turns as recorded: a thought and one call of mini-swe-agent's bash tool.
TURNS = [
    ("Let me read calc.py first.", "cat calc.py"),
    ("Now run the check to see the failure.", "python3 check.py"),
    ("Are there conventions I should respect?", "cat NOTES.md"),
    ("And the documented API.", "cat API.md"),
    ("Where is mean() defined?", "grep -n 'def mean' calc.py"),
    ("Back to calc.py to edit mean().", "cat calc.py"),
    ("mean() divides by len - 1; it must divide by len.", f"sed -i 's|{BUG}|{FIX}|' calc.py"),
    ("Run the check again.", "python3 check.py"),
    ("The check passes; submitting.", SUBMIT),
]
REREAD = 5  # the turn (0-based) whose read of calc.py comes after the fold


class RecordedUpstream(WireServer):
    """The wire server replaying recorded turns, each reporting as its prompt tokens a
    provider's count of the request it answers (its bytes / 4: the recording's counts
    would not fit requests whose system prompt renders this machine's uname)."""

    def _next(self, received):
        reply = super()._next(received)
        if reply.status != 200:
            return reply
        body = json.loads(reply.body)
        prompt = len(received.raw) // 4
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": 30, "total_tokens": prompt + 30}
        return Reply(reply.status, json.dumps(body).encode(), reply.headers, reply.delay)


@pytest.fixture
def wire():
    server = RecordedUpstream()
    yield server
    server.close()


def turn(n: int, thought: str, command: str) -> dict:
    call = {"id": f"call_msa_{n}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    return {"id": f"chatcmpl-msa-{n}", "object": "chat.completion", "created": 1760000000 + n,
            "model": "gpt-4.1", "choices": [{"index": 0, "finish_reason": "tool_calls",
                                            "message": {"role": "assistant", "content": f"THOUGHT: {thought}",
                                                        "tool_calls": [call]}}]}


@pytest.fixture
def mini() -> Path:
    """The ``mini`` command of the agent's virtualenv; checked before the hub starts."""
    if not MINI.is_file():
        message = (f"mini-swe-agent is not installed in {VENV} (.ci/run installs it from "
                   ".ci/mini-swe-agent.lock; ATRIUM_MINI_SWE_AGENT_VENV names another virtualenv)")
        if REQUIRE:
            pytest.fail(message)
        pytest.skip(message)
    return MINI


def run_mini(mini: Path, *, hub_url: str, key: str, work: Path, home: Path,
             proxy: str) -> subprocess.CompletedProcess:
    """The README's recipe: ``mini`` with the OpenAI-compatible base URL and the room's
    key; yolo mode (no confirmation), exit on submit, no cost limit; nothing from the
    test's own environment but PATH. Anything not for the hub goes to ``proxy``."""
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
        "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy, "NO_PROXY": "127.0.0.1,localhost",
        "http_proxy": proxy, "https_proxy": proxy, "all_proxy": proxy, "no_proxy": "127.0.0.1,localhost",
        "OPENAI_BASE_URL": f"{hub_url}/v1", "OPENAI_API_KEY": key,
        "MSWEA_CONFIGURED": "true",  # no first-run setup prompt
        "MSWEA_COST_TRACKING": "ignore_errors",  # litellm has no price for the hub's model name
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm's price list from its package, not fetched
        "MSWEA_GLOBAL_CONFIG_DIR": str(home / "mini-swe-agent"),
    }
    argv = [str(mini), "--model", "openai/atrium", "--yolo", "--exit-immediately", "--cost-limit", "0",
            "--output", str(home / "run.traj.json"), "--task", TASK]
    return subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=150)


def tool_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_mini_swe_agent_runs_a_task_end_to_end_through_the_gateway(mini, setup, wire, hub, owner, tmp_path):
    AgentProfile.objects.filter(name="gpt").update(context_window=7_000, output_budget=500)
    work = make_git_repo(tmp_path / "work", files={"calc.py": CALC, "check.py": CHECK, "NOTES.md": NOTES,
                                                   "API.md": API})
    for n, (thought, command) in enumerate(TURNS, 1):
        wire.reply(PATH, json_body=turn(n, thought, command))

    # A listening socket as every proxy: a download at run time would knock on it.
    with socket.create_server(("127.0.0.1", 0)) as trap:
        trap.setblocking(False)
        done = run_mini(mini, hub_url=hub.url, key=setup.openai_key, work=work, home=tmp_path / "home",
                        proxy=f"http://127.0.0.1:{trap.getsockname()[1]}")
        with pytest.raises(BlockingIOError):
            trap.accept()  # nothing tried to leave the machine

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trajectory = json.loads((tmp_path / "home" / "run.traj.json").read_text())
    assert trajectory["info"]["exit_status"] == "Submitted"
    assert f"+    {FIX}" in trajectory["info"]["submission"]  # its submission: the diff
    assert FIX in (work / "calc.py").read_text()  # its own shell really changed the file

    upstream = [r.json for r in wire.requests_to(PATH)]
    assert len(upstream) == len(TURNS)
    assert all(r["model"] == "gpt-4.1" for r in upstream)  # the profile's model, not "atrium"
    assert [t["function"]["name"] for t in upstream[0]["tools"]] == ["bash"]

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.state == states.RUNNING and session.agent.name == "gpt"
    assert session.task.objective.startswith("Please solve this issue: " + TASK)
    assert GatewayConversation.objects.get(session=session).requests == len(TURNS)

    # Its bash calls are the session's observations; its reads of calc.py have the
    # file's range on the ledger. The first went upstream whole; a fold took it out
    # before the model read the file again, and that re-read got the text, not a note.
    observations = list(Observation.objects.filter(session=session).order_by("seq"))
    assert [o.purpose for o in observations] == [f"bash {json.dumps({'command': c})}" for _, c in TURNS[:-1]]
    first, reread = observations[0], observations[REREAD]
    assert (first.path, reread.path) == ("calc.py", "calc.py")
    assert reread.served == Observation.Served.REREAD and reread.reread_of_seq == first.seq
    folds = [e.payload for e in SessionEvent.objects.filter(session=session, kind="fold").order_by("seq")]
    assert folds and first.seq in folds[0]["evicted"] and folds[0]["step"] <= REREAD
    first_read = tool_texts(upstream[1])[0]
    assert "def mean(values)" in first_read
    sent = tool_texts(upstream[REREAD + 1])
    assert sent[0].startswith("[receipt ") and "not in the context any more" in sent[0]
    assert sent[-1] == first_read
    served = [e.payload["served"] for e in SessionEvent.objects.filter(session=session, kind="tool.result")
              .order_by("seq")]
    assert served == ["text"] * (len(TURNS) - 1)

    # Its sed -i ran on the client's machine: the write is inferred from the call, and said so.
    changed = [e.payload for e in SessionEvent.objects.filter(session=session, kind="file.changed")]
    assert [(c["path"], c["inferred"], c["call_id"]) for c in changed] == [("calc.py", True, observations[6].call_id)]
    assert session_files_touched(session) == ["calc.py"]

    pages = Client()
    pages.force_login(owner)
    ledger = " ".join(pages.get(reverse("sessions:ledger", args=[session.pk])).content.decode().split())
    for o in observations:
        assert f'id="obs-{o.seq}"' in ledger
    assert "python3 check.py" in ledger and "<code>calc.py</code>" in ledger
    assert f"re-served (was #{first.seq})" in ledger
    assert "<dt>Re-reads after a fold</dt><dd>1</dd>" in ledger
    assert 'id="fold-1"' in ledger and f'id="receipt-{first.seq}"' in ledger
    text = pages.get(reverse("sessions:observation", args=[session.pk, reread.seq])).content.decode()
    assert "def mean(values)" in text  # the re-read's exact text, readable in the room
    room = pages.get(reverse("room", args=[setup.room.slug])).content.decode()
    assert f"/sessions/{session.pk}/" in room
