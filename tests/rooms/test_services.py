from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from rooms import services
from rooms.errors import RoomError
from rooms.models import Membership, Message, Room
from rooms.repository import prepare as repo_module
from rooms.repository.git import git
from rooms.repository.prepare import CloneRepository, PreparedRepository
from tests.rooms.factories import make_agent, make_git_repo, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


class Rollback(Exception):
    """Raised inside a transaction to roll it back."""


def repo_folders() -> set[str]:
    return {p.name for p in Path(settings.REPOS_DIR).iterdir()} if Path(settings.REPOS_DIR).exists() else set()


# --- room_create ----------------------------------------------------------------------


def test_creating_a_room_makes_its_repository_owner_membership_and_first_message():
    owner = make_user("olga")
    room = services.room_create(owner=owner, name="Payments API", check_command=" pytest -q ")
    assert room.slug.startswith("payments-api")
    assert Path(room.repo_path) == settings.REPOS_DIR / room.slug
    assert git("rev-list", "--count", "main", cwd=room.repo_path).strip() == "1"
    assert room.check_command == "pytest -q"
    assert Membership.objects.get(room=room).role == Membership.Role.OWNER
    first = Message.objects.get(room=room)
    assert (first.seq, first.kind, first.text) == (1, "system", "olga created the room.")


def test_rooms_with_the_same_name_get_distinct_slugs_and_reserved_slugs_are_skipped():
    owner = make_user()
    first = services.room_create(owner=owner, name="Same name")
    second = services.room_create(owner=owner, name="Same name")
    reserved = services.room_create(owner=owner, name="New")
    assert first.slug != second.slug
    assert second.slug == f"{first.slug}-2"
    assert reserved.slug != "new"


def test_a_slug_whose_folder_is_taken_on_disk_is_skipped():
    (settings.REPOS_DIR / "orphan-folder").mkdir(parents=True)
    room = services.room_create(owner=make_user(), name="Orphan folder")
    assert room.slug == "orphan-folder-2"


def test_a_git_failure_leaves_no_room_row_and_no_folder(tmp_path):
    owner = make_user()
    source = make_git_repo(tmp_path / "src")
    checked = CloneRepository(path=source)
    # The object store vanishes after the form checked the path: git clone fails.
    shutil.rmtree(source / ".git" / "objects")
    (source / ".git" / "objects").mkdir()
    before = repo_folders()
    with pytest.raises(RoomError) as failure:
        services.room_create(owner=owner, name="Broken", source=checked)
    assert failure.value.code == "repo"
    assert not Room.objects.exists()
    assert not Membership.objects.exists()
    assert repo_folders() == before


def test_a_database_failure_after_git_removes_the_repository(monkeypatch):
    owner = make_user()

    def fail(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(services, "_post_system", fail)
    before = repo_folders()
    with pytest.raises(RuntimeError, match="went away"):
        services.room_create(owner=owner, name="Half made")
    assert not Room.objects.exists()
    assert repo_folders() == before


def test_room_create_refuses_to_run_inside_a_callers_transaction():
    owner = make_user()
    before = repo_folders()
    with pytest.raises(RuntimeError), transaction.atomic():
        services.room_create(owner=owner, name="Nested")
    assert not Room.objects.exists()
    assert repo_folders() == before


def test_a_blank_room_name_is_refused():
    with pytest.raises(RoomError, match="needs a name"):
        services.room_create(owner=make_user(), name="   ")


def test_git_runs_while_no_database_transaction_is_open(monkeypatch, tmp_path):
    """On SQLite an open write transaction makes every other writer of the hub wait
    (chat posts, worker commits, lease heartbeats), and a clone can take minutes."""
    source = make_git_repo(tmp_path / "src", files={"app.py": "x = 1\n"})
    seen: list[tuple[str, bool]] = []
    real_git = repo_module.git

    def watched_git(*args, **kwargs):
        command = next(arg for arg in args if not arg.startswith("-") and "=" not in arg)
        seen.append((command, connection.in_atomic_block))
        return real_git(*args, **kwargs)

    monkeypatch.setattr(repo_module, "git", watched_git)
    services.room_create(owner=make_user(), name="Cloned", source=CloneRepository(path=source))
    services.room_create(owner=make_user(), name="Fresh")
    assert {"clone", "init", "commit"} <= {command for command, _ in seen}
    assert [command for command, in_transaction in seen if in_transaction] == []


def test_a_failure_after_the_rename_removes_the_installed_repository(monkeypatch):
    real_install = PreparedRepository.install

    def install_then_fail(self, target):
        real_install(self, target)
        assert target.is_dir()  # it really was in place
        raise RuntimeError("the commit failed")

    monkeypatch.setattr(PreparedRepository, "install", install_then_fail)
    before = repo_folders()
    with pytest.raises(RuntimeError, match="commit failed"):
        services.room_create(owner=make_user(), name="Almost")
    assert not Room.objects.exists()
    assert not Message.objects.exists()
    assert repo_folders() == before


def test_a_folder_taken_between_preparing_and_installing_fails_cleanly(monkeypatch):
    taken = settings.REPOS_DIR / "taken-meanwhile"
    taken.mkdir(parents=True)
    (taken / "keep.txt").write_text("not ours")
    # Another process takes the folder after the slug was chosen: the rename refuses.
    monkeypatch.setattr(services, "_free_slug", lambda name: "taken-meanwhile")
    before = repo_folders()
    with pytest.raises(RoomError, match="already exists") as refused:
        services.room_create(owner=make_user(), name="Taken meanwhile")
    assert refused.value.code == "repo"
    assert not Room.objects.exists()
    assert repo_folders() == before  # the prepared repository is gone too
    assert (taken / "keep.txt").read_text() == "not ours"


def test_a_clone_of_another_rooms_repository_is_refused_by_the_service():
    owner = make_user()
    other = make_room(make_user(), "Private")
    before = repo_folders()
    with pytest.raises(RoomError, match="inside the hub's data folder") as refused:
        services.room_create(owner=owner, name="Peek", source=CloneRepository(path=Path(other.repo_path)))
    assert refused.value.code == "repo"
    assert list(Room.objects.values_list("name", flat=True)) == ["Private"]
    assert repo_folders() == before


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"name": "Nul\x00room"}, "NUL character"),
        ({"name": "Half \ud800 a pair"}, "surrogate"),
        ({"name": "Fine", "check_command": "pytest\x00 -q"}, "NUL character"),
        ({"name": "Fine", "check_command": "x" * 501}, "at most 500 characters"),
    ],
    ids=["nul-name", "surrogate-name", "nul-check-command", "long-check-command"],
)
def test_room_names_and_check_commands_no_database_can_store_are_refused(fields, error):
    before = repo_folders()
    with pytest.raises(RoomError, match=error) as refused:
        services.room_create(owner=make_user(), **fields)
    assert refused.value.code == "invalid"
    assert not Room.objects.exists()
    assert repo_folders() == before


# --- membership -----------------------------------------------------------------------------


def test_owners_add_and_remove_people_and_the_room_says_so():
    owner, bob = make_user("owner1"), make_user("bob1")
    room = make_room(owner)
    services.membership_add(room=room, actor=owner, username="bob1", role="viewer")
    assert Membership.objects.get(room=room, user=bob).role == "viewer"
    services.membership_remove(room=room, actor=owner, user_id=bob.pk)
    assert not Membership.objects.filter(room=room, user=bob).exists()
    texts = list(Message.objects.filter(room=room, kind="system").values_list("text", flat=True))
    assert texts[-2:] == ["owner1 added bob1 as viewer.", "owner1 removed bob1."]


def test_members_and_viewers_cannot_manage_people():
    owner, member, viewer, other = make_user(), make_user(), make_user(), make_user()
    room = make_room(owner, members=[member], viewers=[viewer])
    for actor in (member, viewer):
        with pytest.raises(RoomError) as refused:
            services.membership_add(room=room, actor=actor, username=other.username)
        assert refused.value.code == "forbidden"
        with pytest.raises(RoomError):
            services.membership_remove(room=room, actor=actor, user_id=viewer.pk if actor is member else member.pk)
    assert Membership.objects.filter(room=room).count() == 3


def test_the_owner_cannot_be_removed_even_by_a_co_owner():
    owner, co_owner = make_user(), make_user()
    room = make_room(owner)
    services.membership_add(room=room, actor=owner, username=co_owner.username, role="owner")
    with pytest.raises(RoomError, match="owner cannot be removed"):
        services.membership_remove(room=room, actor=co_owner, user_id=owner.pk)
    assert Membership.objects.filter(room=room, user=owner).exists()


def test_adding_an_unknown_user_an_existing_member_or_an_unknown_role_is_refused():
    owner, bob = make_user(), make_user()
    room = make_room(owner, members=[bob])
    with pytest.raises(RoomError, match="no user named"):
        services.membership_add(room=room, actor=owner, username="nobody-here")
    with pytest.raises(RoomError, match="already in this room"):
        services.membership_add(room=room, actor=owner, username=bob.username)
    with pytest.raises(RoomError, match="Unknown role"):
        services.membership_add(room=room, actor=owner, username=make_user().username, role="admin")
    assert Membership.objects.filter(room=room).count() == 2


# --- agents -----------------------------------------------------------------------------------


def test_members_assign_and_unassign_agents_and_viewers_cannot():
    owner, member, viewer = make_user(), make_user(), make_user()
    agent = make_agent("fixer")
    room = make_room(owner, members=[member], viewers=[viewer])
    with pytest.raises(RoomError) as refused:
        services.agent_assign(room=room, actor=viewer, agent=agent)
    assert refused.value.code == "forbidden"
    services.agent_assign(room=room, actor=member, agent=agent)
    with pytest.raises(RoomError, match="already assigned"):
        services.agent_assign(room=room, actor=owner, agent=agent)
    with pytest.raises(RoomError):
        services.agent_unassign(room=room, actor=viewer, agent_id=agent.pk)
    services.agent_unassign(room=room, actor=member, agent_id=agent.pk)
    assert not room.room_agents.exists()
    with pytest.raises(RoomError) as missing:
        services.agent_unassign(room=room, actor=member, agent_id=agent.pk)
    assert missing.value.code == "unknown_agent"


# --- messages ------------------------------------------------------------------------------------


