"""The session page: what it shows, and each control calling its service."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from rooms.models import Message
from sessions.models import Approval, Session, SessionEvent
from sessions.services.approvals import approval_request
from tests.sessions.web.conftest import HTMX, append, session_in

pytestmark = pytest.mark.django_db(transaction=True)


def page(client, session: Session) -> str:
    response = client.get(reverse("sessions:session", args=[session.pk]))
    assert response.status_code == 200
    return response.content.decode()


def status(client, session: Session) -> str:
    return client.get(reverse("sessions:session_status", args=[session.pk])).content.decode()


def test_every_session_url_needs_membership_of_its_room(login, task, agent, stranger, client):
    session = session_in(task, agent, "running")
    gets = ["sessions:session", "sessions:session_status"]
    posts = ["sessions:session_steer", "sessions:session_cancel", "sessions:session_retry"]
    for name in gets + posts:
        url = reverse(name, args=[session.pk])
        response = client.get(url) if name in gets else client.post(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), name
        stranger_client = login(stranger)
        response = stranger_client.get(url) if name in gets else stranger_client.post(url, {"text": "hi"})
        assert response.status_code == 404, name
    assert login(stranger).get(reverse("sessions:session", args=[12345])).status_code == 404
    session.refresh_from_db()
    assert session.state == "running" and not Message.objects.filter(kind="steer").exists()


def test_the_header_shows_task_agent_attempts_state_tokens_and_the_ledger_link(login, task, agent, member):
    first = session_in(task, agent, "failed", reason="model call failed: 500")
    second = session_in(task, agent, "running", previous=first, tokens_input=20_000, tokens_cached=15_000,
                        tokens_output=800, started_at=timezone.now() - timedelta(minutes=2, seconds=5))
    html = page(login(member), second)
    assert "Fix median" in html and "fixer" in html and "replay:demo-fix-median.json" in html
    assert f'href="{reverse("sessions:session", args=[first.pk])}" rel="prev"' in html
    assert "20,000 / 15,000 / 800" in html
    assert "2 min 5 s" in html
    assert reverse("sessions:ledger", args=[second.pk]) in html
    assert f'data-ws-path="/ws/sessions/{second.pk}/"' in html
    first_html = page(login(member), first)
    assert f'href="{reverse("sessions:session", args=[second.pk])}" rel="next"' in first_html
    assert "model call failed: 500" in first_html
    assert "This session has ended; a steer reaches only a running session." in first_html
    assert "Send to fixer" in page(login(member), second)


def test_the_gauge_shows_the_latest_projection_against_trigger_ceiling_and_window(login, task, agent, member):
    session = session_in(task, agent, "running")
    append(session, "step.started", {"step": 1, "projection": 2_000, "anchored": False, "trigger": 25_600,
                                     "ceiling": 28_800, "window": 32_000, "postponed": 0, "note": ""})
    append(session, "step.started", {"step": 2, "projection": 27_000, "anchored": True, "trigger": 25_600,
                                     "ceiling": 28_800, "window": 32_000, "postponed": 1, "note": "fold pays later"})
    html = status(login(member), session)
    assert 'class="gauge gauge--fold-due"' in html
    assert "width: 84.4%" in html and "left: 80.0%" in html and "left: 90.0%" in html
    assert "step 2: next request ≈ <strong>27,000</strong>" in html and "fold postponed 1×" in html


def test_the_event_log_reads_like_what_happened(login, task, agent, member):
    session = session_in(task, agent, "succeeded", reason="merged")
    append(session, "model.reply", {"step": 1, "text": "Reading first.", "input_tokens": 900, "cached_input_tokens": 0,
                                    "output_tokens": 40, "model": "recorded",
                                    "tool_calls": [{"id": "c1", "name": "read_file",
                                                    "arguments": {"path": "textstats.py"}}]})
    append(session, "tool.result", {"step": 1, "call_id": "c1", "tool": "read_file", "purpose": "read textstats.py",
                                    "is_error": False, "job": None, "unknown": False, "served": "note",
                                    "tokens": 12, "preview": "[already in context]"})
    append(session, "fold", {"number": 2, "step": 7, "epoch": 2, "reason": "trigger", "postponements": 1,
                             "projection_before": 26_000, "projection_after": 9_000, "evicted": [3, 4, 5],
                             "tokens_freed": 17_000, "revived": [6]})
    append(session, "input.delivered", {"message_id": 9, "kind": "steer", "author": "mo"})
    append(session, "intent.changed", {"step": 3})
    append(session, "nudge", {"kind": "unchecked"})
    append(session, "verify", {"number": 1, "line": "verify #1: python -m pytest -q → exit 0 (812 ms)",
                               "exit_code": 0, "output": "5 passed"})
    append(session, "merge", {"merged": True, "detail": "merged atrium/s1 into main (abc123)"})
    html = page(login(member), session)
    assert "<code>read_file</code> path=textstats.py" in html
    assert "read textstats.py" in html and ">note<" in html
    assert "fold #2</span> at step 7" in html and "26,000 → 9,000 tokens" in html and "3 observations receipted" in html
    assert "1 re-read served as text instead of a note" in html  # the note above was not what it got
    assert "steer from mo</span> delivered" in html
    assert "intent changed" in html and "asked to run a check" in html
    assert "verify #1: python -m pytest -q → exit 0 (812 ms)" in html and "event--ok" in html
    assert "merged atrium/s1 into main (abc123)" in html
    assert f'data-last-seq="{SessionEvent.objects.filter(session=session).count()}"' in html


def test_a_command_shows_its_exit_code_failures_are_marked_and_the_hubs_hand_offs_fold_away(
        login, task, agent, member):
    session = session_in(task, agent, "running")
    append(session, "session.claimed", {"worker": "vm:1:abc"})
    for call, code in (("ok", 0), ("bad", 2)):
        append(session, "tool.result", {"step": 1, "call_id": call, "tool": "shell", "purpose": f"shell: {call}",
                                        "is_error": False, "exit_code": code, "served": "text", "tokens": 9})
    append(session, "tool.result", {"step": 1, "call_id": "old", "tool": "shell", "purpose": "shell: before",
                                    "is_error": False, "served": "text", "tokens": 9})  # an event from before
    append(session, "session.state_changed", {"state": "awaiting_approval"})
    html = page(login(member), session)

    def row(seq: int) -> str:
        start = html.index(f'id="event-{seq}"')
        return html[html.rindex("<li", 0, start):html.index("</li>", start)]

    claimed, ran, failed, before, parked = range(2, 7)
    assert "event--plumbing" in row(1) and "event--plumbing" in row(claimed)  # running, a worker took the turn
    assert 'badge--ok">exit 0<' in row(ran) and "event--error" not in row(ran)
    assert 'badge--danger">exit 2<' in row(failed) and "event--error" in row(failed)
    assert ">exit " not in row(before)
    assert "event--plumbing" not in row(parked) and 'id="show-plumbing"' in html


def test_a_member_steers_a_running_session(login, task, agent, member):
    session = session_in(task, agent, "running")
    response = login(member).post(reverse("sessions:session_steer", args=[session.pk]),
                                  {"text": "Use the fast build profile."}, **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="panel" id="session-steer"')
    assert "next step boundary" in html and "fast build profile" not in html  # sent, box emptied
    steer = Message.objects.get(kind="steer")
    assert (steer.session_link.session, steer.agent, steer.author, steer.text) == (
        session, agent, member, "Use the fast build profile.")


def test_a_steer_to_an_ended_session_or_an_empty_one_says_why(login, task, agent, member):
    ended = session_in(task, agent, "failed")
    html = login(member).post(reverse("sessions:session_steer", args=[ended.pk]), {"text": "hello"}, **HTMX).content.decode()
    assert "This session has ended; steer a running one or start a retry." in html
    running = session_in(task, agent, "running")
    html = login(member).post(reverse("sessions:session_steer", args=[running.pk]), {"text": ""}, **HTMX).content.decode()
    assert "Write what the agent should hear." in html
    assert not Message.objects.filter(kind="steer").exists()


def test_a_parked_session_is_woken_by_a_steer(login, task, agent, member):
    session = session_in(task, agent, "waiting")
    login(member).post(reverse("sessions:session_steer", args=[session.pk]), {"text": "go on"})
    session.refresh_from_db()
    assert session.state == "queued"


def test_cancel_ends_the_session_and_a_second_cancel_is_refused_with_a_sentence(login, task, agent, member):
    session = session_in(task, agent, "running")
    url = reverse("sessions:session_cancel", args=[session.pk])
    html = login(member).post(url, **HTMX).content.decode()
    session.refresh_from_db()
    assert session.state == "cancelled" and session.reason == "cancelled by mo"
    assert "Cancelled." in html and 'data-state="cancelled"' in html and "Cancel session" not in html
    html = login(member).post(url, **HTMX).content.decode()
    assert "The session already ended (cancelled)." in html


def test_retry_dispatches_the_next_attempt_linked_to_this_one(login, task, agent, member):
    failed = session_in(task, agent, "failed")
    response = login(member).post(reverse("sessions:session_retry", args=[failed.pk]), **HTMX)
    retry = Session.objects.get(previous=failed)
    assert response["HX-Redirect"] == reverse("sessions:session", args=[retry.pk])
    assert (retry.attempt, retry.state, retry.agent, retry.task) == (2, "queued", agent, task)
    html = page(login(member), failed)
    assert "next attempt (2)" in html and "Retry" not in html.split('id="session-status"')[1].split("</section>")[0]


def test_retry_is_refused_while_running_and_for_an_attempt_already_retried(login, task, agent, member):
    running = session_in(task, agent, "running")
    html = login(member).post(reverse("sessions:session_retry", args=[running.pk]), **HTMX).content.decode()
    assert "Attempt 1 is still running; cancel it before retrying." in html
    failed = session_in(task, agent, "failed")
    session_in(task, agent, "queued", previous=failed)
    html = login(member).post(reverse("sessions:session_retry", args=[failed.pk]), **HTMX).content.decode()
    assert "Attempt 2 was already retried as attempt 3." in html
    assert Session.objects.count() == 3


def test_a_pending_approval_shows_as_a_card_and_the_decision_reaches_the_service(login, task, agent, member):
    session = session_in(task, agent, "awaiting_approval")
    approval = approval_request(session=session, call_id="call-7", tool="shell", arguments={"command": "make deploy"})
    html = status(login(member), session)
    assert f'id="approval-{approval.pk}"' in html and "&quot;command&quot;: &quot;make deploy&quot;" in html
    assert 'value="approve"' in html and 'value="deny"' in html and 'value="always"' in html
    url = reverse("sessions:approval_decide", args=[session.pk, approval.pk])
    html = login(member).post(url, {"decision": "always"}, **HTMX).content.decode()
    approval.refresh_from_db()
    session.refresh_from_db()
    assert (approval.state, approval.always, approval.decided_by) == ("approved", True, member)
    assert session.state == "queued"  # woken to run the call
    assert "shell approved for the rest of this session." in html and f'id="approval-{approval.pk}"' not in html
    html = login(member).post(url, {"decision": "deny"}, **HTMX).content.decode()
    assert "This call was already decided." in html
    assert SessionEvent.objects.filter(session=session, kind="approval.decided").count() == 1


def test_the_card_says_what_the_line_runs_and_exactly_what_always_covers(login, task, agent, member):
    session = session_in(task, agent, "awaiting_approval")
    approval_request(session=session, call_id="w", tool="shell",
                     arguments={"command": "timeout 20 python3 -c 'import os'"})
    approval_request(session=session, call_id="p", tool="shell", arguments={"command": "git status --short"})
    html = status(login(member), session)
    assert "timeout → python3 -c import os (runs code from its arguments)" in html
    assert ("“Always” approves, for the rest of this session, <code>shell</code> running exactly "
            "<code>timeout 20 python3 -c &#x27;import os&#x27;</code> again, nothing else.") in html
    assert ("“Always” approves, for the rest of this session, <code>shell</code> commands starting with "
            "<code>git status</code> that run alone") in html


def test_an_edit_card_shows_the_change_as_a_diff_and_always_covers_that_file_only(login, task, agent, member):
    session = session_in(task, agent, "awaiting_approval")
    approval_request(session=session, call_id="e", tool="edit_file", arguments={
        "path": "stats.py", "old": "def median(v):\n    return v[len(v) // 2]\n",
        "new": "def median(v):\n    mid = len(v) // 2\n    return (v[mid - 1] + v[mid]) / 2\n"})
    approval_request(session=session, call_id="w", tool="write_file",
                     arguments={"path": "notes/<b>.md", "content": "# Notes\n<script>x</script>\n"})
    html = status(login(member), session)
    assert '<span class="diff__same"> def median(v):</span>' in html
    assert '<span class="diff__del">-    return v[len(v) // 2]</span>' in html
    assert '<span class="diff__add">+    mid = len(v) // 2</span>' in html
    assert '<span class="diff__add">+    return (v[mid - 1] + v[mid]) / 2</span>' in html
    assert "\\n" not in html.split('class="approval__diff')[1].split("</pre>")[0]  # no escaped newlines
    assert "<code>edit_file</code> on <code>stats.py</code>." in html
    assert '<span class="diff__add">+&lt;script&gt;x&lt;/script&gt;</span>' in html  # escaped, as everywhere
    assert "<code>notes/&lt;b&gt;.md</code> <span class=\"meta\">(the whole file)</span>" in html


def test_a_long_write_is_shown_in_part():
    from sessions.models import Approval
    from sessions.runtime.approvals import code
    from sessions.templatetags.session_work import (
        CHANGE_LINES_SHOWN,
        code_spans,
        proposed_change,
        without_fences,
    )

    write = Approval(tool="write_file", arguments={"path": "big.txt", "content": "x\n" * (CHANGE_LINES_SHOWN + 5)})
    change = proposed_change(write)
    assert len(change["lines"]) == CHANGE_LINES_SHOWN and change["more"] == 5
    assert proposed_change(Approval(tool="shell", arguments={"command": "ls"})) is None
    assert proposed_change(Approval(tool="edit_file", arguments={"path": "a", "old": 1, "new": "x"})) is None
    assert code_spans("`a<b>` and <i>") == "<code>a&lt;b&gt;</code> and &lt;i&gt;"
    assert code_spans("one ` alone <i>") == "one ` alone &lt;i&gt;"
    assert code_spans("exactly ``rm -rf `pwd`/b`` and `` `id` ``") == (
        "exactly <code>rm -rf `pwd`/b</code> and <code>`id`</code>")
    assert without_fences(f"`shell` running exactly {code('rm `pwd`')} again") == "shell running exactly rm `pwd` again"


def test_an_unknown_decision_or_approval_is_refused(login, task, agent, member):
    session = session_in(task, agent, "awaiting_approval")
    approval = approval_request(session=session, call_id="c", tool="shell", arguments={"command": "ls"})
    html = login(member).post(reverse("sessions:approval_decide", args=[session.pk, approval.pk]),
                              {"decision": "maybe"}, **HTMX).content.decode()
    assert "Decide approve, deny or always." in html
    other = session_in(task, agent, "running")
    assert login(member).post(reverse("sessions:approval_decide", args=[other.pk, approval.pk]),
                              {"decision": "approve"}).status_code == 404
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_a_viewer_watches_but_every_control_is_refused(login, task, agent, viewer):
    session = session_in(task, agent, "awaiting_approval")
    approval = approval_request(session=session, call_id="c", tool="shell", arguments={"command": "ls"})
    client = login(viewer)
    html = page(client, session)
    assert "&quot;command&quot;: &quot;ls&quot;" in html  # the card, without its buttons
    assert "Cancel session" not in html and 'value="approve"' not in html and "you can watch but not steer" in html
    for name, data, refusal in [
        ("sessions:session_steer", {"text": "hi"}, "you can watch but not steer"),
        ("sessions:session_cancel", {}, "viewers only look"),
        ("sessions:session_retry", {}, "viewers only look"),
    ]:
        assert client.post(reverse(name, args=[session.pk]), data).status_code == 403, name
        assert refusal in client.post(reverse(name, args=[session.pk]), data, **HTMX).content.decode(), name
    decide = reverse("sessions:approval_decide", args=[session.pk, approval.pk])
    assert client.post(decide, {"decision": "approve"}).status_code == 403
    session.refresh_from_db()
    approval.refresh_from_db()
    assert session.state == "awaiting_approval" and approval.state == "pending"
    assert not Session.objects.filter(previous=session).exists() and not Message.objects.filter(kind="steer").exists()


def test_without_htmx_controls_redirect_back_with_a_message(login, task, agent, member):
    session = session_in(task, agent, "running")
    client = login(member)
    response = client.post(reverse("sessions:session_cancel", args=[session.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("sessions:session", args=[session.pk])
    assert "Cancelled." in response.content.decode()
    response = client.post(reverse("sessions:session_cancel", args=[session.pk]), follow=True)
    assert "The session already ended (cancelled)." in response.content.decode()


def test_cancelling_a_session_withdraws_its_approval_card_and_a_late_click_is_refused(login, task, agent, member):
    session = session_in(task, agent, "awaiting_approval")
    approval = approval_request(session=session, call_id="call-9", tool="shell", arguments={"command": "make"})
    card = f'id="approval-{approval.pk}"'
    assert card in status(login(member), session)
    html = login(member).post(reverse("sessions:session_cancel", args=[session.pk]), **HTMX).content.decode()
    assert card not in html
    approval.refresh_from_db()
    assert approval.state == Approval.State.EXPIRED
    decided = SessionEvent.objects.get(session=session, kind="approval.decided")
    assert decided.payload["state"] == "expired" and decided.payload["reason"] == "the session cancelled"
    # A page still showing the card (say, opened before the cancel) clicks Approve.
    html = login(member).post(reverse("sessions:approval_decide", args=[session.pk, approval.pk]),
                              {"decision": "approve"}, **HTMX).content.decode()
    assert "This session has ended (cancelled): there is nothing left to approve." in html
    approval.refresh_from_db()
    assert approval.state == Approval.State.EXPIRED and approval.decided_by is None


def test_the_steer_box_reloads_as_a_note_once_the_session_ended(login, task, agent, member):
    session = session_in(task, agent, "running")
    url = reverse("sessions:session_steer", args=[session.pk])
    assert "<form" in login(member).get(url, **HTMX).content.decode()
    assert 'data-ended="false"' in status(login(member), session)
    Session.objects.filter(pk=session.pk).update(state="succeeded")
    assert 'data-ended="true"' in status(login(member), session)
    html = login(member).get(url, **HTMX).content.decode()
    assert "<form" not in html and "This session has ended" in html
