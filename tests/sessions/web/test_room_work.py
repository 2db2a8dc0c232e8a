"""The room page's work region: tasks, their sessions, and the controls around them."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from sessions.models import Session, Task
from tests.rooms.factories import make_agent
from tests.sessions.web.conftest import HTMX, session_in

pytestmark = pytest.mark.django_db(transaction=True)


def intent_file(task: Task) -> str:
    return (Path(task.room.repo_path) / task.intent_path).read_text()


def test_the_room_page_lists_tasks_with_their_sessions_and_links(login, room, task, agent, member):
    running = session_in(task, agent, "running", tokens_input=1234, tokens_cached=1000, tokens_output=56)
    html = login(member).get(reverse("room", args=[room.slug])).content.decode()
    assert 'id="room-work"' in html and 'id="room-tasks"' in html
    assert "Fix median" in html and "Don&#x27;t change the tests." in html
    assert f'id="session-row-{running.pk}" data-state="running"' in html
    assert "1,234 / 1,000 / 56" in html
    assert reverse("sessions:session", args=[running.pk]) in html
    assert reverse("sessions:ledger", args=[running.pk]) in html
    assert "Start with fixer" in html and 'id="task-create"' in html


def test_a_viewer_sees_the_work_but_no_controls(login, room, task, agent, viewer):
    session_in(task, agent, "succeeded")
    html = login(viewer).get(reverse("room", args=[room.slug])).content.decode()
    assert "Fix median" in html and "succeeded" in html.lower()
    assert 'id="task-create"' not in html
    assert "Start with" not in html and "edit intent" not in html


def test_a_member_creates_a_task_with_constraints_kept_verbatim(login, room, member):
    constraints = "  Don't change the tests.\r\n\r\n  - never touch vendor/  "
    response = login(member).post(reverse("sessions:task_create", args=[room.slug]), {
        "title": "Speed up", "objective": "Make it fast", "definition_of_done": "bench < 1s",
        "prerequisites": "", "constraints": constraints,
    }, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="room-work"')  # the whole region, form reset
    assert 'name="title" maxlength="200" required id="id_title">' in html
    assert "Task “Speed up” created" in html and 'id="task-' in html
    task = Task.objects.get(room=room, title="Speed up")
    assert task.constraints == "  Don't change the tests.\n\n  - never touch vendor/  "
    assert task.created_by == member
    assert "  Don't change the tests.\n\n  - never touch vendor/  " in intent_file(task)


def test_without_htmx_creating_a_task_redirects_to_the_room(login, room, owner):
    response = login(owner).post(reverse("sessions:task_create", args=[room.slug]),
                                 {"title": "Plain", "objective": "No script"})
    assert response.status_code == 302 and response["Location"] == reverse("room", args=[room.slug])
    assert Task.objects.filter(room=room, title="Plain").exists()


@pytest.mark.parametrize(("data", "error"), [
    ({"title": "", "objective": "x"}, "This field is required."),
    ({"title": "t", "objective": "   "}, "Say what the agent should achieve."),
    ({"title": "x" * 201, "objective": "o"}, "Ensure this value has at most 200 characters"),
])
def test_a_task_form_with_errors_comes_back_with_them_and_nothing_is_created(login, room, member, data, error):
    response = login(member).post(reverse("sessions:task_create", args=[room.slug]), data, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert error in html and "<details class=\"task-new\" id=\"task-new\" open>" in html
    assert not Task.objects.filter(room=room).exists()


def test_without_htmx_a_task_form_error_shows_the_form_page(login, room, member):
    response = login(member).post(reverse("sessions:task_create", args=[room.slug]), {"title": "t", "objective": ""})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert "sessions/task_form.html" in [t.name for t in response.templates]


def test_viewers_and_strangers_cannot_create_tasks(login, room, viewer, stranger):
    data = {"title": "t", "objective": "o"}
    assert login(viewer).post(reverse("sessions:task_create", args=[room.slug]), data, **HTMX).status_code == 403
    assert login(stranger).post(reverse("sessions:task_create", args=[room.slug]), data).status_code == 404
    assert not Task.objects.filter(room=room).exists()


def test_start_with_an_agent_queues_attempt_one_and_returns_the_task_list(login, room, task, agent, member):
    response = login(member).post(reverse("sessions:task_start", args=[task.pk]), {"agent": agent.pk}, **HTMX)
    assert response.status_code == 200
    session = Session.objects.get(task=task)
    assert (session.agent, session.attempt, session.state, session.created_by) == (agent, 1, "queued", member)
    html = response.content.decode()
    assert "fixer started on “Fix median” (attempt 1)." in html
    assert f'id="session-row-{session.pk}" data-state="queued"' in html


def test_start_without_htmx_goes_to_the_new_session_page(login, room, task, agent, owner):
    response = login(owner).post(reverse("sessions:task_start", args=[task.pk]), {"agent": agent.pk})
    session = Session.objects.get(task=task)
    assert response["Location"] == reverse("sessions:session", args=[session.pk])


def test_start_with_an_agent_not_in_the_room_is_refused_with_a_sentence(login, room, task, member):
    outsider = make_agent("outsider")
    response = login(member).post(reverse("sessions:task_start", args=[task.pk]), {"agent": outsider.pk}, **HTMX)
    assert "Pick an agent assigned to this room." in response.content.decode()
    assert not Session.objects.exists()


def test_viewers_cannot_start_tasks_and_strangers_do_not_see_them(login, task, agent, viewer, stranger):
    url = reverse("sessions:task_start", args=[task.pk])
    htmx = login(viewer).post(url, {"agent": agent.pk}, **HTMX)
    assert "viewers only look" in htmx.content.decode()
    assert login(viewer).post(url, {"agent": agent.pk}).status_code == 403
    assert login(stranger).post(url, {"agent": agent.pk}).status_code == 404
    assert not Session.objects.exists()


def test_editing_the_intent_rewrites_the_file_a_running_session_re_reads(login, task, member):
    url = reverse("sessions:task_intent", args=[task.pk])
    page = login(member).get(url).content.decode()
    assert "Don&#x27;t change the tests." in page
    response = login(member).post(url, {"objective": "Make the tests pass, fast", "definition_of_done": "green",
                                        "prerequisites": "", "constraints": "Don't change the tests.\r\nKeep it small."})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.objective == "Make the tests pass, fast"
    assert task.constraints == "Don't change the tests.\nKeep it small."
    text = intent_file(task)
    assert "Make the tests pass, fast" in text and "Don't change the tests.\nKeep it small." in text


def test_an_intent_without_objective_is_refused_and_the_file_stays(login, task, member):
    before = intent_file(task)
    response = login(member).post(reverse("sessions:task_intent", args=[task.pk]),
                                  {"objective": "", "constraints": "anything"})
    assert response.status_code == 200 and "This field is required." in response.content.decode()
    assert intent_file(task) == before


def test_viewers_cannot_edit_the_intent_and_strangers_get_404(login, task, viewer, stranger):
    url = reverse("sessions:task_intent", args=[task.pk])
    assert login(viewer).get(url).status_code == 403
    assert login(viewer).post(url, {"objective": "mine now"}).status_code == 403
    assert login(stranger).get(url).status_code == 404
    task.refresh_from_db()
    assert task.objective == "Make the tests pass"


def test_the_task_list_partial_is_what_the_room_page_reloads(login, room, task, agent, viewer, stranger):
    session = session_in(task, agent, "awaiting_approval")
    response = login(viewer).get(reverse("sessions:room_tasks", args=[room.slug]))
    html = response.content.decode()
    assert html.lstrip().startswith("<div id=\"room-tasks\"")
    assert 'hx-trigger="session-changed from:#room delay:200ms, room-agents-changed from:body"' in html
    assert 'data-state="awaiting_approval"' in html and str(session.pk) in html
    assert login(stranger).get(reverse("sessions:room_tasks", args=[room.slug])).status_code == 404


def test_the_room_list_badges_count_sessions_that_need_a_person_or_run(login, room, task, agent, owner):
    session_in(task, agent, "awaiting_approval")
    session_in(task, agent, "needs_merge")
    session_in(task, agent, "running")
    session_in(task, agent, "running")
    session_in(task, agent, "succeeded")
    html = login(owner).get(reverse("room_list")).content.decode()
    assert 'data-badge="needs-input"' in html
    assert "awaiting approval (1)" in html and "needs merge (1)" in html and "running (2)" in html
    assert ">idle<" not in html


def test_the_room_totals_read_the_stored_analyses_of_all_sessions_at_once(login, room, task, agent, member):
    """The totals panel reloads whenever a session changes: its queries must not grow with
    the number of sessions whose stored analysis is current."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions.services.records import session_analysis_refresh

    client = login(member)

    def queries_with(sessions: int) -> int:
        while Session.objects.filter(task=task).count() < sessions:
            session_analysis_refresh(session_in(task, agent, "succeeded"))
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("sessions:room_totals", args=[room.slug]), **HTMX).status_code == 200
        return len(queries)

    assert queries_with(1) == queries_with(6)


def test_a_gateway_conversation_whose_client_went_quiet_says_so(login, room, task, agent, owner):
    """Issue 30: a gateway conversation showed "Running" until its time limit, and
    nothing runs it but its client's next request."""
    from datetime import timedelta

    from django.utils import timezone

    from endpoint.keys import gateway_key_create
    from endpoint.models import GatewayConversation

    key = gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name="aider").key
    quiet, busy = (session_in(task, agent, "running", origin=Session.Origin.ENDPOINT, attempt=n,
                              started_at=timezone.now() - timedelta(hours=1)) for n in (1, 2))
    hub_session = session_in(task, agent, "running", attempt=3)
    for n, session in enumerate((quiet, busy)):
        GatewayConversation.objects.create(key=key, conversation=f"c{n}", session=session, requests=2)
    GatewayConversation.objects.filter(session=quiet).update(updated_at=timezone.now() - timedelta(minutes=20))
    client = login(owner)

    tasks = client.get(reverse("sessions:room_tasks", args=[room.slug])).content.decode()
    row = lambda session: tasks[tasks.index(f'id="session-row-{session.pk}"'):].split("</tr>")[0]  # noqa: E731
    assert 'data-badge="client-idle"' in row(quiet) and "client idle 20" in row(quiet)
    assert "40" in row(quiet)  # its duration ends at its last request (40 minutes), not now
    assert 'data-badge="client-idle"' not in row(busy) and 'data-badge="client-idle"' not in row(hub_session)
    status = client.get(reverse("sessions:session_status", args=[quiet.pk])).content.decode()
    assert 'id="session-client-idle"' in status
    assert 'id="session-client-idle"' not in client.get(reverse("sessions:session_status", args=[busy.pk])).content.decode()
