"""The OpenHands SDK, from its packages and as its docs start an agent, runs a
fix-the-test task end to end through the gateway in session mode: its own process and
virtualenv (tests/endpoint/openhands_run.py), its terminal tool running real commands
and its file editor editing the working copy, litellm calling the hub's ``/v1`` with
the room's gateway key, and the upstream a scripted ``openai:`` agent (the local
wire-protocol server) answering in its tools' shapes. Its environment has no way off
the machine.

The SDK is not the hub's: ``.ci/run`` installs the pinned set (``.ci/openhands-sdk.lock``)
into ``.ci/openhands-venv``; ``ATRIUM_OPENHANDS_VENV`` names another virtualenv. Without
it the test is skipped, except in CI (``ATRIUM_REQUIRE_REAL_SERVICES=1``), where it fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from endpoint.models import GatewayConversation
from sessions.models import Observation, Session, SessionEvent
from tests.endpoint.outside_clients import installed, no_way_out
from tests.endpoint.test_codex_cli import BUG, CALC, CHECK, FIX, TASK
from tests.endpoint.test_sessions import completion
from tests.rooms.factories import make_git_repo

pytestmark = pytest.mark.timeout(240)

PATH = "/v1/chat/completions"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("ATRIUM_OPENHANDS_VENV") or REPO_ROOT / ".ci" / "openhands-venv")
PYTHON = VENV / "bin" / "python"
DRIVER = Path(__file__).with_name("openhands_run.py")
# The model's turns in the SDK's tools: read, check, edit with the file editor, check, finish.
TURNS = [
    ("terminal", {"command": "cat calc.py"}),
    ("terminal", {"command": "python3 check.py"}),
    ("file_editor", {"command": "str_replace", "path": "calc.py", "old_str": BUG, "new_str": FIX}),  # made absolute
    ("terminal", {"command": "python3 check.py"}),
    ("finish", {"message": "Fixed: mean() divides by len(values); check.py passes."}),
]


@pytest.fixture
def openhands() -> Path:
    """The Python of the SDK's virtualenv; checked before the hub starts."""
    return installed(PYTHON, f"the OpenHands SDK is not installed in {VENV} (.ci/run installs it from "
                             ".ci/openhands-sdk.lock; ATRIUM_OPENHANDS_VENV names another virtualenv)")


def test_an_openhands_sdk_agent_fixes_the_test_through_the_gateway(openhands, setup, wire, hub, owner, tmp_path):
    work = make_git_repo(tmp_path / "work", files={"calc.py": CALC, "check.py": CHECK})
    for n, (tool, arguments) in enumerate(TURNS, 1):
        if tool == "file_editor":  # its editor takes absolute paths only
            arguments = {**arguments, "path": str(work / arguments["path"])}
        wire.reply(PATH, json_body=completion(text=f"Step {n}.", call=(tool, arguments), n=n))
    home = tmp_path / "home"
    home.mkdir()

    with no_way_out() as proxies:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
               "ATRIUM_GATEWAY_URL": f"{hub.url}/v1", "ATRIUM_GATEWAY_KEY": setup.openai_key,
               "OPENHANDS_SUPPRESS_BANNER": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", **proxies}
        done = subprocess.run([str(openhands), str(DRIVER), TASK], cwd=work, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=200)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "FINISHED:" in done.stdout and "finished" in done.stdout.split("FINISHED:")[-1].lower()
    assert FIX in (work / "calc.py").read_text()  # its file editor really changed the file
    assert subprocess.run(["python3", "check.py"], cwd=work, capture_output=True).returncode == 0

    upstream = [r.json for r in wire.requests_to(PATH)]
    assert len(upstream) == len(TURNS)
    assert all(r["model"] == "gpt-4.1" for r in upstream)
    assert {"terminal", "file_editor", "finish"} <= {t["function"]["name"] for t in upstream[0]["tools"]}
    results = [m["content"] for m in upstream[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == len(TURNS) - 1 and "mean ok" in str(results[-1])

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.agent.name == "gpt" and TASK in session.task.objective
    assert GatewayConversation.objects.get(session=session).requests == len(TURNS)
    observations = list(Observation.objects.filter(session=session).order_by("seq"))
    assert [o.tool for o in observations] == [tool for tool, _ in TURNS[:-1]]
    assert observations[0].path == "calc.py"  # its terminal's read of the file, on the ledger
    changed = [e.payload for e in SessionEvent.objects.filter(session=session, kind="file.changed")]
    assert [(c["path"], c["inferred"]) for c in changed] == [(str(work / "calc.py"), True)]  # its editor's write
    pages = Client()
    pages.force_login(owner)
    ledger = pages.get(reverse("sessions:ledger", args=[session.pk])).content.decode()
    assert all(f'id="obs-{o.seq}"' in ledger for o in observations)
