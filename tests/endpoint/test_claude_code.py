"""Claude Code, from its npm package and unmodified (``ANTHROPIC_BASE_URL`` and a key are
all it is told), runs a fix-the-test task end to end through the gateway's Messages API
in session mode: its own process, its default model and settings (adaptive thinking,
a system message inside ``messages``, ``context_management``, beta headers, 64,000
``max_tokens``), its own ``Bash`` tool running real commands in the working copy, the
room's gateway key, and the upstream a scripted ``anthropic:`` agent (the local
wire-protocol server). Besides the base URL and key, its environment turns off what
would reach the internet and has nothing to do with the gateway (the update check,
telemetry, error reports): this machine has none.

Claude Code is not the hub's: ``.ci/run`` installs the version pinned in
``.ci/claude-code/package-lock.json`` into ``.ci/claude-code``; ``ATRIUM_CLAUDE_CODE``
names another ``claude``. Without it the test is skipped, except in CI
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
from tests.endpoint.test_codex_cli import BUG, CALC, CHECK, FIX, TASK
from tests.endpoint.test_sessions import anthropic_message, completion
from tests.rooms.factories import make_git_repo

pytestmark = pytest.mark.timeout(180)

REPO_ROOT = Path(__file__).resolve().parents[2]
CLAUDE = Path(os.environ.get("ATRIUM_CLAUDE_CODE") or REPO_ROOT / ".ci" / "claude-code" / "node_modules" / ".bin"
              / "claude")

# The model's turns: one call of Claude Code's Bash tool each, then the answer.
COMMANDS = ["cat calc.py", "python3 check.py", f"sed -i 's|{BUG}|{FIX}|' calc.py", "python3 check.py"]
DONE = "Fixed: mean() now divides by len(values); check.py passes."


@pytest.fixture
def claude() -> Path:
    """The ``claude`` command; checked before the hub starts."""
    return installed(CLAUDE, f"Claude Code is not installed at {CLAUDE} (.ci/run installs it; "
                             "ATRIUM_CLAUDE_CODE names another)")


def thought(message: dict, n: int) -> dict:
    """``message`` with a thinking block first, signed as an Anthropic upstream signs it."""
    signature = f"EqQBCkgIBxABGAIiQL{n:04d}" + "x" * 60
    return {**message, "content": [{"type": "thinking", "thinking": f"Plan {n}: run the next check.",
                                    "signature": signature}, *message["content"]]}


@pytest.mark.parametrize("upstream", ["anthropic", "openai"])
def test_claude_code_runs_a_task_end_to_end_through_the_gateway_with_its_defaults(claude, setup, wire, hub, tmp_path,
                                                                                  upstream):
    """An Anthropic agent (its own format), and an OpenAI one (translated)."""
    anthropic = upstream == "anthropic"
    path, key = ("/v1/messages", setup.anthropic_key) if anthropic else ("/v1/chat/completions", setup.openai_key)
    work = make_git_repo(tmp_path / "work", files={"calc.py": CALC, "check.py": CHECK})
    for n, command in enumerate(COMMANDS, 1):
        call = ("Bash", {"command": command})
        wire.stream(path, streamed_answer(thought(anthropic_message(text=f"Step {n}.", tool=call, n=n), n) if anthropic
                                          else completion(text=f"Step {n}.", call=call, n=n)))
    wire.stream(path, streamed_answer(anthropic_message(text=DONE, n=len(COMMANDS) + 1) if anthropic
                                      else completion(text=DONE, n=len(COMMANDS) + 1)))
    home = tmp_path / "home"
    home.mkdir()

    with no_way_out() as proxies:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
               "ANTHROPIC_BASE_URL": hub.url, "ANTHROPIC_API_KEY": key,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **proxies}
        done = subprocess.run([str(claude), "-p", TASK, "--allowedTools", "Bash"], cwd=work, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=150)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert DONE in done.stdout
    assert FIX in (work / "calc.py").read_text()  # its own tool really changed the file
    assert subprocess.run(["python3", "check.py"], cwd=work, capture_output=True).returncode == 0

    sent = wire.requests_to(path)
    upstream_bodies = [r.json for r in sent]
    assert len(upstream_bodies) == len(COMMANDS) + 1
    assert all(r["stream"] is True for r in upstream_bodies)  # streamed from the upstream, piece by piece
    # Its defaults as the gateway took them: context management left out, thinking along
    # to an Anthropic upstream (not to gpt-4.1, which does not reason), its system message
    # as a reminder where it stood (after the task), its betas along to an Anthropic upstream.
    first = upstream_bodies[0]
    assert "context_management" not in first and ("thinking" in first) == anthropic
    if anthropic:
        assert all(r["model"] == "claude-sonnet-5" for r in upstream_bodies)  # the profile's, not Claude Code's
        assert "Bash" in [t["name"] for t in first["tools"]]
        betas = sent[0].headers["anthropic-beta"].split(",")
        assert "claude-code-20250219" in betas and not [b for b in betas if "context-management" in b]
        # Each answer's thinking, streamed to Claude Code with its signature, came back to
        # the upstream in the next request as the upstream wrote it.
        for n, body in enumerate(upstream_bodies[1:], 1):
            answers = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
            assert [a[0] for a in answers] == [thought(anthropic_message(n=k), k)["content"][0]
                                              for k in range(1, n + 1)]
        blocks = first["messages"][0]["content"]
        assert TASK in blocks[0]["text"] and blocks[-1]["text"].startswith("<system-reminder>\n"), blocks
        results = [json.dumps(b) for m in upstream_bodies[-1]["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
    else:
        assert all(r["model"] == "gpt-4.1" for r in upstream_bodies)
        assert "Bash" in [t["function"]["name"] for t in first["tools"]]
        users = [m["content"] for m in first["messages"] if m["role"] == "user"]
        assert TASK in users[0] and users[1].startswith("<system-reminder>\n"), users
        results = [m["content"] for m in upstream_bodies[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == len(COMMANDS) and "mean ok" in results[-1]

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.agent.name == ("claude" if anthropic else "gpt") and session.task.objective == TASK
    assert GatewayConversation.objects.get(session=session).requests == len(COMMANDS) + 1
    assert not session.events.filter(kind="segment.started").exists()  # its history read as append-only
    observations = list(Observation.objects.filter(session=session).order_by("seq"))
    assert [o.tool for o in observations] == ["Bash"] * len(COMMANDS)
