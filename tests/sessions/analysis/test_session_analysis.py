"""`analyze`, the session page's analysis panel and `transcript` on a recorded session with
known patterns (tests/sessions/analysis/replays/patterns.json)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils.html import escape

from sessions.analysis.selectors import session_facts
from sessions.analysis.trace import analyze

EXPECTED = {
    "steps": 9, "model_calls": 9, "failed_calls": 0, "tool_calls": 10, "parallel_steps": 2, "max_calls_in_step": 2,
    "tools": {"read_file": 5, "shell": 4, "edit_file": 1},
    "rereads": 2,  # textstats.py read three times with the same content before the edit
    "reads_after_own_write": 1,
    "shell_runs": 4, "shell_failed": 2, "repeated_commands": 3,
    "test_runs": 4, "test_failed": 2, "tests_after_first_pass": 1,
    "phases": {"explore": 4, "write_to_green": 3, "after_green": 2},
    "first_write_step": 5, "first_green_step": 7,
    "folds": 0, "segments": 1, "verify_runs": 1, "verify_passed": 1,
    "loop_alarms": 1,  # the third read of the same content raised it
}


def analyze_json(session) -> dict:
    out = StringIO()
    call_command("analyze", session.pk, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_analyze_gives_the_exact_figures_of_a_session_with_known_patterns(patterns_session):
    figures = analyze_json(patterns_session)
    assert {name: figures[name] for name in EXPECTED} == EXPECTED
    assert figures["reread_ranges"] == [{"path": "textstats.py", "start": 1, "end": 21, "reads": 3}]
    assert figures["commands_repeated"] == [{"command": "python -m pytest -q", "runs": 4, "failed": 2}]
    assert figures["tokens_in"] == sum(c.input_tokens for c in patterns_session.provider_calls.all())
    assert figures["tools_ms"] > 0 and figures["cost"] is None and figures["cost_unknown_calls"] == 9


def test_the_table_form_names_every_figure(patterns_session):
    out = StringIO()
    call_command("analyze", patterns_session.pk, stdout=out)
    table = out.getvalue()
    for label, value in analyze(session_facts(patterns_session)).rows():
        assert label in table and value.split(" (")[0] in table
    assert "python -m pytest -q ×4 (2 failed)" in table and "textstats.py:1-21 ×3" in table


@pytest.mark.django_db
def test_an_unknown_session_is_a_clear_error():
    with pytest.raises(CommandError, match="no session 999"):
        call_command("analyze", 999)
    with pytest.raises(CommandError, match="no session 999"):
        call_command("transcript", 999)


def test_the_session_page_shows_the_same_figures(client, person, patterns_session):
    client.force_login(person)
    html = client.get(reverse("sessions:session", args=[patterns_session.pk])).content.decode()
    rows = analyze(session_facts(patterns_session)).rows()
    for label, value in rows:
        assert f"<th scope=\"row\">{escape(label)}</th><td>{escape(value)}</td>" in html
    assert ("Re-reads (same range and content)", "2") in rows
    assert ("Phases (model calls)", "explore 4 → first write → green 3 → after green 2") in rows
    assert 'id="session-loop-badge"' in html and "textstats.py lines 1-21" in html
    partial = client.get(reverse("sessions:session_insights", args=[patterns_session.pk])).content.decode()
    assert partial.count('<th scope="row">') == len(rows)


def test_the_transcript_reads_as_the_session_happened(client, person, patterns_session, tmp_path):
    out = tmp_path / "session.md"
    call_command("transcript", patterns_session.pk, "--out", str(out), stdout=StringIO())
    text = out.read_text()
    assert text.startswith("# Fix median\n")
    steer = text.index("**pat** (steer):\n\n> Keep the diff small, please.")
    first_reply = text.index("## Step 1\n\nReading the code and its tests.")
    assert steer < first_reply
    assert '- `read_file` `path="textstats.py"`' in text
    assert "- `shell` `python -m pytest -q`" in text and "exit 1 after" in text
    assert "> **Loop suspected** (reread): textstats.py lines 1-21 ×3" in text
    assert text.index("> **verify #1: python -m pytest -q → exit 0") < text.index("> **Merged**")
    client.force_login(person)
    response = client.get(reverse("sessions:session_transcript", args=[patterns_session.pk]))
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="session-')
    assert response.content.decode() == text


def test_analysis_and_transcript_stay_inside_the_room(client, patterns_session, django_user_model):
    client.force_login(django_user_model.objects.create_user("outsider", password="pw-outsider-1"))
    for name in ("session_insights", "session_transcript"):
        assert client.get(reverse(f"sessions:{name}", args=[patterns_session.pk])).status_code == 404


def test_a_change_made_through_the_shell_is_the_first_write_and_a_read_after_it_counts():
    from sessions.analysis.facts import SessionFacts, ToolFact

    tools = (
        ToolFact(step=1, call_id="a", tool="read_file", arguments={"path": "app.py"}, read=("app.py", 1, 9, "h1")),
        ToolFact(step=2, call_id="b", tool="shell", arguments={"command": "sed -i 's/a/b/' app.py"}, exit_code=0,
                 wrote=("app.py",)),
        ToolFact(step=3, call_id="c", tool="read_file", arguments={"path": "app.py"}, read=("app.py", 1, 9, "h2")),
        ToolFact(step=4, call_id="d", tool="shell", arguments={"command": "python -m pytest -q"}, exit_code=0),
    )
    result = analyze(SessionFacts(session_id=1, title="t", agent="a", model="m", state="succeeded", tools=tools))
    assert (result.first_write_step, result.first_green_step, result.reads_after_own_write) == (2, 4, 1)
