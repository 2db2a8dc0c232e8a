"""Where a room's repository may come from: local paths only inside the folders an
operator lists (none by default), or an uploaded git bundle."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from rooms.errors import RoomError
from rooms.models import Room
from rooms.repository.git import git
from rooms.repository.prepare import (
    CloneRepository,
    borrowed_object_dirs,
    check_clone_source,
    prepare_repository,
)
from tests.rooms.factories import make_git_repo, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def clone_roots(settings):
    settings.ATRIUM_CLONE_ROOTS = [Path("/")]
    return settings


@pytest.fixture
def allowed(tmp_path, clone_roots):
    folder = tmp_path / "allowed"
    folder.mkdir()
    clone_roots.ATRIUM_CLONE_ROOTS = [folder.resolve()]
    return folder


def test_by_default_no_local_path_may_be_copied(clone_roots, tmp_path):
    clone_roots.ATRIUM_CLONE_ROOTS = []
    repo = make_git_repo(tmp_path / "mine")
    with pytest.raises(RoomError, match="turned off on this hub .*ATRIUM_CLONE_ROOTS.*upload a git bundle"):
        check_clone_source(str(repo))
    with pytest.raises(RoomError, match="turned off"):
        prepare_repository(CloneRepository(repo), parent=tmp_path / "rooms")  # without the form's check too


@pytest.mark.parametrize("where", ["/etc", "/root", "/nonexistent/repo", "{outside}", "{outside}/missing"])
def test_paths_outside_the_operators_folders_are_refused_alike_whether_they_exist_or_not(allowed, tmp_path, where):
    outside = make_git_repo(tmp_path / "outside")
    path = where.format(outside=outside)
    with pytest.raises(RoomError) as refused:
        check_clone_source(path)
    assert refused.value.message == (f"{path} is not inside the folders repositories may be copied from "
                                     f"({allowed.resolve()}).")


def test_a_symlink_in_an_allowed_folder_leading_out_is_refused(allowed, tmp_path):
    outside = make_git_repo(tmp_path / "outside")
    (allowed / "link").symlink_to(outside)
    with pytest.raises(RoomError, match="is not inside the folders"):
        check_clone_source(str(allowed / "link"))


def test_a_repository_inside_whose_git_data_is_outside_is_refused(allowed, tmp_path):
    outside = make_git_repo(tmp_path / "outside")
    inside = allowed / "pointer"
    inside.mkdir()
    (inside / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    with pytest.raises(RoomError, match="is not inside the folders"):
        check_clone_source(str(inside))
    borrowing = make_git_repo(allowed / "borrowing")
    (borrowing / ".git" / "objects" / "info" / "alternates").write_text(str(outside / ".git" / "objects") + "\n")
    with pytest.raises(RoomError, match="is not inside the folders"):
        check_clone_source(str(borrowing))


def test_a_chain_of_borrowed_objects_leading_to_another_rooms_repository_is_refused(clone_roots, tmp_path, settings):
    """git follows an alternate's own alternates (up to five hops): a folder in the allowed
    place that borrows from another allowed folder, which borrows from a room's repository
    in the hub's data folder, would copy that room's files for anyone knowing one commit id."""
    allowed = tmp_path / "allowed"  # every folder is allowed (``/``): the data folder still is not
    allowed.mkdir()
    victim = make_git_repo(Path(settings.DATA_DIR) / "repos" / "victim", files={"secret.txt": "VICTIM\n"})
    victim_commit = git("rev-parse", "HEAD", cwd=victim).strip()
    middle = allowed / "middle"
    git("init", "-q", "--bare", str(middle), cwd=allowed)
    (middle / "objects" / "info" / "alternates").write_text(str(victim / ".git" / "objects") + "\n")
    borrowing = make_git_repo(allowed / "borrowing")
    (borrowing / ".git" / "objects" / "info" / "alternates").write_text("../../../middle/objects\n")
    git("update-ref", "refs/heads/stolen", victim_commit, cwd=borrowing, check=False)
    with pytest.raises(RoomError, match="inside the hub's data folder"):
        check_clone_source(str(borrowing))
    with pytest.raises(RoomError, match="inside the hub's data folder"):
        prepare_repository(CloneRepository(borrowing), parent=tmp_path / "rooms")


@pytest.mark.parametrize("hop", ["quoted", "through a link"])
def test_borrowing_is_judged_where_git_reads_it_not_where_the_line_seems_to_point(clone_roots, tmp_path,
                                                                                  settings, hop):
    """A quoted line (``\\056`` is a dot to git) or a relative line read from a linked
    folder (git resolves the link first) points elsewhere than its text seems to."""
    victim = make_git_repo(Path(settings.DATA_DIR) / "repos" / f"victim-{uuid.uuid4().hex}", files={"secret.txt": "V\n"})
    allowed = tmp_path / "allowed"
    borrowing = make_git_repo(allowed / "borrowing")
    alternates = borrowing / ".git" / "objects" / "info" / "alternates"
    if hop == "quoted":  # up to / and down again, relative to the borrowing objects folder
        alternates.write_text('"' + "\\056\\056/" * 40 + str(victim / ".git" / "objects").lstrip("/") + '"\n')
    else:  # git reads the middle's line from where the link leads, two folders higher up
        middle = allowed / "middle"
        git("init", "-q", "--bare", str(middle), cwd=allowed)
        (allowed / "deep" / "down").mkdir(parents=True)
        (allowed / "deep" / "down" / "link").symlink_to(middle)
        alternates.write_text(str(allowed / "deep" / "down" / "link" / "objects") + "\n")
        up_to_root = "../" * len((middle / "objects").resolve().parts[1:])
        (middle / "objects" / "info" / "alternates").write_text(
            up_to_root + str(victim / ".git" / "objects").lstrip("/") + "\n")
    assert ".." not in alternates.read_text()
    assert (victim / ".git" / "objects").resolve() in [d.resolve() for d in borrowed_object_dirs(borrowing)]
    with pytest.raises(RoomError, match="inside the hub's data folder"):
        check_clone_source(str(borrowing))


@pytest.mark.parametrize("line", ["crlf", "quoted for a copy"])
def test_what_git_does_not_read_as_borrowing_is_not_borrowed_by_the_copy_either(clone_roots, tmp_path,
                                                                                  settings, line):
    """git's alternates reader and a local copy's read one file two ways: a line ending
    in CR (ignored by git, trimmed by the copy) or a quoted line (unquoted by git, taken
    literally by the copy) passed the check and borrowed another room's objects. The
    copy goes through git's own transport now, which reads the file as the check did."""
    victim = make_git_repo(Path(settings.DATA_DIR) / "repos" / f"victim-{uuid.uuid4().hex}", files={"secret.txt": "V\n"})
    secret = git("rev-parse", "HEAD", cwd=victim).strip()
    borrowing = make_git_repo(tmp_path / "allowed" / "borrowing")
    objects = borrowing / ".git" / "objects"
    if line == "crlf":
        (objects / "info" / "alternates").write_bytes(str(victim / ".git" / "objects").encode() + b"\r\n")
    else:  # the copy reads objects/"../decoy"/ literally, git reads .git/decoy (which does not exist)
        decoy = objects / '"..' / 'decoy"'
        (decoy / "info").mkdir(parents=True)
        (decoy / "info" / "alternates").write_text(str(victim / ".git" / "objects") + "\n")
        (objects / "info" / "alternates").write_text('"../decoy"\n')
    # A commit of the source's own whose parent is the victim's.
    tree = git("rev-parse", "HEAD^{tree}", cwd=borrowing).strip()
    commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"], cwd=borrowing,
                            input=f"tree {tree}\nparent {secret}\nauthor a <a@x> 0 +0000\n"
                                  "committer a <a@x> 0 +0000\n\nmine\n",
                            capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", "refs/heads/main", commit, cwd=borrowing)
    assert borrowed_object_dirs(borrowing) == []  # git reads no borrowing here
    with pytest.raises(RoomError):
        prepare_repository(CloneRepository(borrowing), parent=tmp_path / "rooms")
    assert not any((tmp_path / "rooms").iterdir())


def test_a_copy_of_a_borrowing_repository_keeps_its_own_objects(allowed):
    """A legitimate borrower (``git clone --shared``) is copied whole: the room does not go on
    reading objects from a folder its owner may change or remove."""
    lender = make_git_repo(allowed / "lender", files={"app.py": "print(1)\n"})
    git("clone", "-q", "--shared", str(lender), str(allowed / "borrower"), cwd=allowed)
    prepared = prepare_repository(check_clone_source(str(allowed / "borrower")), parent=allowed.parent / "rooms")
    assert not (prepared.path / ".git" / "objects" / "info" / "alternates").exists()
    shutil.rmtree(lender)
    assert git("show", "HEAD:app.py", cwd=prepared.path) == "print(1)\n"
    prepared.discard()


def test_a_repository_inside_the_operators_folders_is_copied(allowed):
    repo = make_git_repo(allowed / "app", files={"app.py": "print(1)\n"})
    source = check_clone_source(str(repo))
    prepared = prepare_repository(source, parent=allowed.parent / "rooms")
    assert (prepared.path / "app.py").read_text() == "print(1)\n"
    prepared.discard()


def _bundle(tmp_path: Path, files: dict[str, str]) -> bytes:
    repo = make_git_repo(tmp_path / "to-bundle", branch="trunk", files=files)
    git("bundle", "create", str(tmp_path / "repo.bundle"), "--all", cwd=repo)
    return (tmp_path / "repo.bundle").read_bytes()


def test_a_room_starts_from_an_uploaded_bundle_and_the_upload_is_not_kept(client, tmp_path, settings):
    client.force_login(make_user("uploader"))
    data = _bundle(tmp_path, {"lib.py": "x = 1\n", "tests/test_lib.py": "def test(): pass\n"})
    response = client.post(reverse("rooms:create"), {
        "name": "From bundle", "source": "bundle", "check_command": "python -m pytest -q",
        "bundle": SimpleUploadedFile("repo.bundle", data, content_type="application/octet-stream"),
    })
    room = Room.objects.get(name="From bundle")
    assert response.status_code == 302
    assert (Path(room.repo_path) / "lib.py").read_text() == "x = 1\n" and room.default_branch == "trunk"
    assert git("log", "--format=%s", cwd=room.repo_path).strip() == "first"
    uploads = settings.DATA_DIR / "uploads"
    assert not uploads.exists() or not os.listdir(uploads)


@pytest.mark.parametrize(("content", "message"), [
    (b"not a bundle at all", "is not a git bundle"),
    (None, "Choose the bundle file"),
])
def test_a_bad_upload_is_a_form_error_and_creates_nothing(client, content, message, settings):
    client.force_login(make_user("uploader"))
    data = {"name": "Bad bundle", "source": "bundle"}
    if content is not None:
        data["bundle"] = SimpleUploadedFile("x.bundle", content)
    response = client.post(reverse("rooms:create"), data)
    assert response.status_code == 200
    said = " ".join(response.context["form"].errors["bundle"])
    assert message in said
    assert str(settings.DATA_DIR) not in said and "/tmp" not in said  # issue 30: no server path
    if "`" in said:  # a command it names is shown as code, not between literal backticks
        assert "<code>git bundle create repo.bundle --all</code>" in response.content.decode()
        assert "`" not in response.content.decode().split('id="field-bundle"')[1].split("</div>")[0]
    assert not Room.objects.filter(name="Bad bundle").exists()
    uploads = settings.DATA_DIR / "uploads"
    assert not uploads.exists() or not os.listdir(uploads)


def test_an_oversized_bundle_is_refused(client, tmp_path, settings):
    settings.ATRIUM_UPLOAD_MAX_BYTES = 100
    client.force_login(make_user("uploader"))
    response = client.post(reverse("rooms:create"), {
        "name": "Big", "source": "bundle",
        "bundle": SimpleUploadedFile("repo.bundle", _bundle(tmp_path, {"a": "b" * 1000})),
    })
    assert "the limit is 100 bytes" in response.context["form"].errors["bundle"][0]


def test_the_form_offers_a_local_copy_only_when_an_operator_allows_one(client, clone_roots, allowed):
    client.force_login(make_user("chooser"))
    assert b'value="clone"' in client.get(reverse("rooms:create")).content
    clone_roots.ATRIUM_CLONE_ROOTS = []
    page = client.get(reverse("rooms:create")).content
    assert b'value="clone"' not in page and b'value="bundle"' in page
    refused = client.post(reverse("rooms:create"), {"name": "Sneaky", "source": "clone", "clone_path": "/etc"})
    assert refused.status_code == 200 and "source" in refused.context["form"].errors
