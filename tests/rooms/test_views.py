from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from rooms import services
from rooms.models import Membership, Message, Room
from sessions.models import Session, Task
from tests.rooms.factories import make_agent, make_git_repo, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def login(client):
    def _login(user):
        client.force_login(user)
        return client

    return _login


def assert_no_template_leaks(html: str) -> None:
    """Template syntax in the output means a comment or tag did not parse."""
    for marker in ("{#", "#}", "{%", "%}", "{{", "}}"):
        assert marker not in html, marker


def repo_folders() -> set[str]:
    repos = Path(settings.REPOS_DIR)
    return {p.name for p in repos.iterdir()} if repos.exists() else set()


def test_every_room_page_needs_a_login(client):
    room = make_room(make_user())
    for url in (
        reverse("room_list"),
        reverse("rooms:create"),
        reverse("room", args=[room.slug]),
        reverse("rooms:messages", args=[room.slug]) + "?before=5",
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_room_list_shows_only_my_rooms_with_counts_and_badges(login):
    me, other = make_user("me"), make_user("other")
    mine = make_room(me, "Mine", members=[other], agents=[make_agent(), make_agent()])
    make_room(other, "Not mine")
    task = Task.objects.create(room=mine, title="t", objective="o")
    Session.objects.create(task=task, agent=mine.room_agents.first().agent, state=Session.State.AWAITING_APPROVAL)
    response = login(me).get(reverse("room_list"))
    assert response.status_code == 200
    rooms = list(response.context["rooms"])
    assert [r.name for r in rooms] == ["Mine"]
    assert (rooms[0].my_role, rooms[0].member_count, rooms[0].agent_count) == ("owner", 2, 2)
    assert rooms[0].sessions_awaiting_approval == 1
    html = response.content.decode()
    assert "awaiting approval (1)" in html and "Not mine" not in html
    assert_no_template_leaks(html)


def test_creating_a_room_on_the_web_opens_it(login):
    me = make_user("me")
    response = login(me).post(
        reverse("rooms:create"), {"name": "Web room", "source": "new", "check_command": "pytest -q"}
    )
    room = Room.objects.get(name="Web room")
    assert response.status_code == 302
    assert response["Location"] == reverse("room", args=[room.slug])
    assert Path(room.repo_path).is_dir()


def test_creating_a_room_from_a_local_repository(login, tmp_path):
    source = make_git_repo(tmp_path / "app", files={"app.py": "x = 1\n"})
    response = login(make_user()).post(
        reverse("rooms:create"), {"name": "Copied", "source": "clone", "clone_path": str(source)}
    )
    assert response.status_code == 302
    assert (Path(Room.objects.get(name="Copied").repo_path) / "app.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("path", "error"),
    [("/definitely/not/here", "does not exist"), ("{tmp}", "is not a git repository")],
    ids=["missing", "not-a-repo"],
)
def test_a_bad_clone_path_is_a_form_error_and_creates_nothing(login, tmp_path, path, error):
    before = repo_folders()
    response = login(make_user()).post(
        reverse("rooms:create"),
        {"name": "Nope", "source": "clone", "clone_path": path.format(tmp=tmp_path)},
    )
    assert response.status_code == 200
    assert error in response.context["form"].errors["clone_path"][0]
    assert error in response.content.decode()
    assert not Room.objects.exists()
    assert repo_folders() == before


def test_copying_another_rooms_repository_is_a_form_error(login):
    other = make_room(make_user(), "Private")
    before = repo_folders()
    for path in (other.repo_path, f"{settings.DATA_DIR}/worktrees/anything"):
        response = login(make_user()).post(
            reverse("rooms:create"), {"name": "Peek", "source": "clone", "clone_path": path}
        )
        assert response.status_code == 200
        assert response.context["form"].errors["clone_path"] == [
            f"{path} is inside the hub's data folder; repositories there belong to rooms and cannot be copied."
        ]
    assert list(Room.objects.values_list("name", flat=True)) == ["Private"]
    assert repo_folders() == before


def test_a_clone_path_with_a_nul_character_gets_one_error_not_two(login):
    response = login(make_user()).post(
        reverse("rooms:create"), {"name": "Nul", "source": "clone", "clone_path": "/srv/a\x00b"}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["clone_path"] == ["Null characters are not allowed."]
    assert not Room.objects.exists()


def test_a_room_page_is_a_404_for_non_members(login):
    room = make_room(make_user())
    client = login(make_user())
    assert client.get(reverse("room", args=[room.slug])).status_code == 404
    assert client.get(reverse("rooms:messages", args=[room.slug]) + "?before=9").status_code == 404
    assert client.post(reverse("rooms:member_add", args=[room.slug]), {"username": "x"}).status_code == 404


def test_the_room_page_shows_the_newest_page_and_older_pages_load_upwards(login):
    me = make_user("me")
    room = make_room(me)
    for i in range(60):
        services.message_post(room=room, author=me, kind="chat", text=f"message {i:02d}")
    client = login(me)
    page = client.get(reverse("room", args=[room.slug]))
    history = page.context["history"]
    assert [m.seq for m in history] == list(range(12, 62))  # the newest 50, oldest first
    assert page.context["has_older"] and page.context["last_seq"] == 61
    html = page.content.decode()
    assert 'data-last-seq="61"' in html
    assert html.index("message 10") < html.index("message 59")
    assert "?before=12" in html and 'id="room-work"' in html
    assert_no_template_leaks(html)

    older = client.get(reverse("rooms:messages", args=[room.slug]) + "?before=12", **HTMX)
    assert [m.seq for m in older.context["history"]] == list(range(1, 12))
    assert not older.context["has_older"]
    assert "Load older" not in older.content.decode()
    assert_no_template_leaks(older.content.decode())
    assert client.get(reverse("rooms:messages", args=[room.slug]) + "?before=x").status_code == 400


def test_viewers_get_no_message_box_and_no_management_forms(login):
    owner, viewer = make_user("owner"), make_user("viewer")
    room = make_room(owner, viewers=[viewer])
    html = login(viewer).get(reverse("room", args=[room.slug])).content.decode()
    assert 'id="composer"' not in html
    assert "You are a viewer" in html
    assert reverse("rooms:member_add", args=[room.slug]) not in html
    assert reverse("rooms:agent_assign", args=[room.slug]) not in html


def test_an_owner_adds_a_member_with_htmx_and_gets_the_people_panel_back(login):
    owner, bob = make_user("owner"), make_user("bob")
    room = make_room(owner)
    client = login(owner)
    response = client.post(reverse("rooms:member_add", args=[room.slug]), {"username": "bob", "role": "member"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="members"')
    assert "bob" in html and "<html" not in html
    assert_no_template_leaks(html)
    assert Membership.objects.get(room=room, user=bob).role == "member"

    again = client.post(reverse("rooms:member_add", args=[room.slug]), {"username": "bob", "role": "member"}, **HTMX)
    assert "already in this room" in again.content.decode()

    removed = client.post(reverse("rooms:member_remove", args=[room.slug, bob.pk]), **HTMX)
    assert removed.status_code == 200
    assert not Membership.objects.filter(room=room, user=bob).exists()


def test_without_htmx_the_member_form_redirects_back_with_a_message(login):
    owner = make_user("owner")
    room = make_room(owner)
    response = login(owner).post(
        reverse("rooms:member_add", args=[room.slug]), {"username": "ghost", "role": "member"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("room", args=[room.slug])
    assert "no user named" in response.content.decode()


def test_a_member_cannot_manage_people_and_a_viewer_cannot_assign_agents(login):
    owner, member, viewer = make_user(), make_user(), make_user()
    agent = make_agent()
    room = make_room(owner, members=[member], viewers=[viewer])
    assert login(member).post(
        reverse("rooms:member_add", args=[room.slug]), {"username": viewer.username, "role": "owner"}, **HTMX
    ).status_code == 403
    assert login(member).post(reverse("rooms:member_remove", args=[room.slug, viewer.pk])).status_code == 403
    assert login(viewer).post(reverse("rooms:agent_assign", args=[room.slug]), {"agent": agent.pk}).status_code == 403
    assert Membership.objects.get(room=room, user=viewer).role == "viewer"
    assert not room.room_agents.exists()


def test_a_member_assigns_an_agent_and_the_message_box_learns_it(login):
    owner, member = make_user(), make_user()
    agent = make_agent("fixer")
    room = make_room(owner, members=[member])
    client = login(member)
    response = client.post(reverse("rooms:agent_assign", args=[room.slug]), {"agent": agent.pk}, **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="agents"')
    assert 'id="composer-target" aria-label="Send to" hx-swap-oob="true"' in html
    assert f'<option value="{agent.pk}">Steer fixer</option>' in html
    assert_no_template_leaks(html)
    assert room.room_agents.get().agent == agent
    assert response["HX-Trigger"] == "room-agents-changed"  # the panels naming the room's agents reload

    response = client.post(reverse("rooms:agent_unassign", args=[room.slug, agent.pk]), **HTMX)
    assert "No agent is assigned" in response.content.decode()
    assert response["HX-Trigger"] == "room-agents-changed"
    assert not room.room_agents.exists()
    assert Message.objects.filter(room=room, text__endswith="unassigned fixer.").exists()


def test_the_agents_panel_reload_is_for_the_rooms_people_only(login):
    owner, viewer, stranger = make_user(), make_user(), make_user()
    agent = make_agent("fixer")
    room = make_room(owner, viewers=[viewer], agents=[agent])
    url = reverse("rooms:agents_panel", args=[room.slug])
    assert login(stranger).get(url, **HTMX).status_code == 404
    html = login(viewer).get(url, **HTMX).content.decode()
    assert "fixer" in html and "<form" not in html  # read-only: no assign, no unassign
    owned = login(owner).get(url, **HTMX).content.decode()
    assert "Assign" in owned or "unassign" in owned
    assert 'id="composer-target"' not in owned  # a reload leaves the message box's target as it was


def test_assigning_an_agent_twice_is_a_form_error_not_a_crash(login):
    owner = make_user()
    agent = make_agent()
    room = make_room(owner, agents=[agent])
    response = login(owner).post(reverse("rooms:agent_assign", args=[room.slug]), {"agent": agent.pk}, **HTMX)
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert room.room_agents.count() == 1
    assert "HX-Trigger" not in response  # nothing changed, nothing reloads


def test_help_texts_show_commands_as_code_not_backticks(client):
    """Issue 30: help texts showed literal backticks."""
    client.force_login(make_user())
    page = client.get(reverse("rooms:create")).content.decode()
    assert "<code>git bundle create repo.bundle --all</code>" in page and "`git bundle" not in page
    assert "<code>python -m pytest -q</code>" in page


def test_rooms_without_a_slug_is_the_room_list(client):
    """Issue 30: /rooms/ was a 404."""
    client.force_login(make_user())
    response = client.get("/rooms/")
    assert response.status_code == 301 and response["Location"] == reverse("room_list")
