"""aider, from its package and unmodified, runs a fix-the-test task end to end through the
gateway in session mode: its own process (the ``aider`` command of its own virtualenv,
as a user installs it), its own edits (whole files in its reply, written by aider), its
own test command run after each edit (``--auto-test``) with the failure sent back to the
model, litellm calling the hub's ``/v1`` with the room's gateway key and streaming, and
the upstream a scripted ``openai:`` agent (the local wire-protocol server). Its
environment turns off what would reach the internet (the update check, analytics,
litellm's price list) and names the model's window in the metadata file aider reads
from home, as its docs say for a model it does not know (else it downloads litellm's
list): this machine has none of the internet.

aider is not the hub's: ``.ci/run`` installs the pinned set (``.ci/aider.lock``) into
``.ci/aider-venv``; ``ATRIUM_AIDER_VENV`` names another virtualenv. Without it the test
is skipped, except in CI (``ATRIUM_REQUIRE_REAL_SERVICES=1``), where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from endpoint.models import GatewayConversation
from sessions.models import Session
from tests.endpoint.outside_clients import installed, no_way_out
from tests.endpoint.test_codex_cli import BUG, CALC, CHECK, FIX, TASK
from tests.endpoint.test_sessions import completion
from tests.rooms.factories import make_git_repo

pytestmark = pytest.mark.timeout(180)

PATH = "/v1/chat/completions"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("ATRIUM_AIDER_VENV") or REPO_ROOT / ".ci" / "aider-venv")
AIDER = VENV / "bin" / "aider"
WRONG = "return sum(values) / (len(values) + 1)"


def whole_file(note: str, body: str) -> str:
    """A reply in aider's ``whole`` edit format: the file's path, then all of it fenced."""
    return f"{note}\n\ncalc.py\n```python\n{CALC.replace(BUG, body)}```\n"


@pytest.fixture
def aider() -> Path:
    """The ``aider`` command of its virtualenv; checked before the hub starts."""
    return installed(AIDER, f"aider is not installed in {VENV} (.ci/run installs it from .ci/aider.lock; "
                            "ATRIUM_AIDER_VENV names another virtualenv)")


def test_aider_fixes_the_test_through_the_gateway_in_two_rounds(aider, setup, wire, hub, owner, tmp_path):
    work = make_git_repo(tmp_path / "work", files={"calc.py": CALC, "check.py": CHECK})
    # Its first edit is wrong; the check fails; aider sends the failure back; the second fixes it.
    wire.reply(PATH, json_body=completion(text=whole_file("Off by one: dividing by len + 1.", WRONG), n=1))
    wire.reply(PATH, json_body=completion(text=whole_file("The check says 1.5: divide by len.", FIX), n=2))
    home = tmp_path / "home"
    home.mkdir()
    (home / ".aider.model.metadata.json").write_text(json.dumps({"openai/atrium": {
        "max_input_tokens": 128_000, "max_output_tokens": 8_000, "input_cost_per_token": 0,
        "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat"}}))

    with no_way_out() as proxies:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
               "OPENAI_API_BASE": f"{hub.url}/v1", "OPENAI_API_KEY": setup.openai_key,
               "LITELLM_LOCAL_MODEL_COST_MAP": "True", **proxies}
        argv = [str(aider), "--model", "openai/atrium", "--edit-format", "whole", "--message", TASK,
                "--yes-always", "--no-git", "--auto-test", "--test-cmd", "python3 check.py",
                "--no-check-update", "--analytics-disable", "--no-show-model-warnings", "--no-show-release-notes",
                "--no-pretty", "--no-fancy-input", "calc.py"]
        done = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=150)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert FIX in (work / "calc.py").read_text()  # aider wrote the file from the reply
    assert subprocess.run(["python3", "check.py"], cwd=work, capture_output=True).returncode == 0

    upstream = [r.json for r in wire.requests_to(PATH)]
    assert len(upstream) == 2, done.stdout[-3000:]
    # The profile's model, called streaming as aider asked (this upstream answers whole all the same).
    assert all(r["model"] == "gpt-4.1" and r.get("stream") is True for r in upstream)
    second = "\n".join(str(m["content"]) for m in upstream[1]["messages"])
    assert "AssertionError: 1.5" in second  # its test's failure went back to the model

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert session.agent.name == "gpt" and TASK in session.task.objective
    assert GatewayConversation.objects.get(session=session).requests == 2
    # aider rewrites its history each round (the files' message moves after its answers,
    # the task loses its format reminder): the same run, so a new segment of the session,
    # found by the gateway's own answer in it (given back without its final newline).
    assert session.events.filter(kind="segment.started").count() == 1
    pages = Client()
    pages.force_login(owner)
    page = pages.get(reverse("sessions:session", args=[session.pk]))
    assert page.status_code == 200 and "Off by one" in page.content.decode()
