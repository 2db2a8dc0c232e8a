"""Where a room's repository may come from: local paths only inside the folders an
operator lists (none by default), or an uploaded git bundle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from rooms.errors import RoomError
from rooms.models import Room
from rooms.repository.git import git
from rooms.repository.prepare import CloneRepository, check_clone_source, prepare_repository
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
