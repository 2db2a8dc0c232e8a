"""The real-model path end to end, without a real model: `--model openai:…` against a
local server speaking the OpenAI wire protocol (the official SDK, no patching). The
agent awaits when it has done a turn; the driver sends the next one; the session's
requests are judged like any model's, and behaviour checks count."""

from __future__ import annotations

import json

import pytest
import yaml
from django.core.management import call_command

from tests.agents.providers.wire_server import WireServer
from tests.sessions.runtime.test_provider_paths import CHAT, chat_reply

SCENARIO = {
    "kind": "constraint_survives",
    "repo": {"files": {"a.py": "x = 1\n", "vendor/lib.py": "y = 2\n"}},
    "task": {"title": "Small", "objective": "Two small changes.", "constraints": "Never edit vendor/."},
    "turns": [
        {"agent": [{"calls": [{"tool": "read_file", "path": "a.py"}]}]},
        {"person": "Write b.py.", "reset": True},
        {"person": "Last message: which files did you touch?"},
    ],
    "checks": [
        {"request": "in_force", "text": "Never edit vendor/."},
        {"request": "files_touched"},
        {"behaviour": "untouched", "path_glob": "vendor/**"},
        {"behaviour": "last_answer_mentions", "text": "b.py"},
    ],
}
PROSE = "## Progress and blockers\nRead a.py.\n## Next step\nWrite b.py."


@pytest.fixture
def wire():
    server = WireServer()
    yield server
    server.close()


@pytest.mark.timeout(300)
def test_a_real_model_run_waits_for_each_turn_and_is_judged_on_its_requests_and_behaviour(
        hub_workers, person, wire, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    for reply in (
        chat_reply("Reading.", [("c1", "read_file", {"path": "a.py"}), ("c2", "await", {"seconds": 600})]),
        chat_reply(PROSE),  # the reset's handoff prose
        chat_reply("Writing.", [("c3", "write_file", {"path": "b.py", "content": "z = 3\n"}),
                                ("c4", "await", {"seconds": 600})]),
        chat_reply("I touched b.py only; vendor/ is as it was."),
        chat_reply("I touched b.py only; vendor/ is as it was."),  # after the nudge to run something
    ):
        wire.reply(CHAT, json_body=reply)
    scenario = tmp_path / "small.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    worker = hub_workers(ATRIUM_WORKER_SLICE_SECONDS="600")
    out = tmp_path / "eval.json"
    call_command("eval", str(scenario), "--model", "openai:test-model", "--runs", "1", "--no-worker",
                 "--as", person.username, "--json", str(out))
    (run,) = json.loads(out.read_text())["runs"]
    assert run["state"] == "passed", (run, worker.hub_process.log_tail())
    assert run["resets"] == 1
    assert run["request_checks"] == {"passed": 2, "total": 2}
    assert run["behaviour_checks"] == {"passed": 2, "total": 2}
    # The person's words went over the wire after the reset, inside the handoff.
    sent = [r.json for r in wire.requests if r.path == CHAT]
    after_reset = [body for body in sent if any("# Handoff: segment 2" in str(m.get("content")) for m in body["messages"])]
    assert after_reset and all("Never edit vendor/." in json.dumps(body) for body in after_reset)
