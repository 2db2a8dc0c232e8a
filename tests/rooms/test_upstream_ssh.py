"""A room linked to its upstream over SSH, against a real ``sshd`` serving a bare
repository: the room's own deploy key (its public half shown, its private half nowhere),
the host's keys recorded when linked and demanded after, the room empty until the key
is on the forge, then the upstream's files in main, later commits fetched, the room's
work pushed back; "Fetch now" done by a real worker."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from rooms.forges import forge_for
from rooms.models import Message, Room, RoomUpstream
from rooms.repository.git import git
from rooms.repository.ssh import fingerprints, new_deploy_key, public_half, ssh_address
from rooms.repository.upstream import check_upstream_url
from rooms.services import membership_add
from rooms.upstream_link import bring_in, give_work
from tests.rooms.factories import make_git_repo, make_user
from tests.rooms.ssh_server import SshServer, ssh_server  # noqa: F401 (the fixture)


@pytest.mark.parametrize(("url", "allowed", "says"), [
    ("git@github.com:org/repo.git", ["github.com"], None),
    ("ssh://git@github.com/org/repo.git", ["github.com"], None),
    ("ssh://git@forge.internal:2222/org/repo.git", ["ssh://forge.internal:2222"], None),
    ("ssh://git@github.com:2222/org/repo.git", ["github.com"], "not a host"),
    ("git@forge.internal:org/repo.git", ["ssh://forge.internal:2222"], "not a host"),
    ("git@evil.example:org/repo.git", ["github.com"], "not a host"),
    ("git@-oProxyCommand=touch%20x:org/repo.git", ["github.com"], "user or host"),
    ("ssh://-oProxyCommand=x@github.com/org/repo.git", ["github.com"], "user or host"),
    ("git@github.com:-u/repo.git", ["github.com"], "names a repository"),
    ("git@github.com:../../etc/passwd", ["github.com"], "names a repository"),
    ("ssh://git:pw@github.com/org/repo.git", ["github.com"], "no password"),
    ("ssh://git@github.com:x/org/repo.git", ["github.com"], "port"),
])
def test_ssh_urls_on_hosts_the_operator_allows(url, allowed, says):
    if says is None:
        assert check_upstream_url(url, allowed) == url
    else:
        with pytest.raises(ValueError, match=says):
            check_upstream_url(url, allowed)


def test_a_deploy_key_is_new_each_time_and_named_as_ssh_keygen_names_it(tmp_path):
    first, second = new_deploy_key(), new_deploy_key()
    assert first != second and "OPENSSH PRIVATE KEY" in first
    line = public_half(first, "atrium-room-x")
    assert line.startswith("ssh-ed25519 ") and line.endswith(" atrium-room-x")
    (tmp_path / "key.pub").write_text(f"[127.0.0.1]:2222 {line.rsplit(' ', 1)[0]}\n")
    listed = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "key.pub")], capture_output=True, text=True,
                            check=True).stdout.split()
    assert fingerprints((tmp_path / "key.pub").read_text()) == [f"ssh-ed25519 {listed[1]}"]


def test_a_forge_is_found_from_an_ssh_url():
    github = forge_for("github", "git@github.com:org/repo.git", "t")
    assert (github.api_url, github.project) == ("https://api.github.com", "org/repo")
    gitlab = forge_for("gitlab", "ssh://git@gitlab.example:2222/group/sub/app.git", "t")
    assert (gitlab.api_url, gitlab.project) == ("https://gitlab.example/api/v4", "group/sub/app")
    assert ssh_address("https://github.com/org/repo.git") is None


@pytest.fixture
def team(tmp_path, ssh_server: SshServer, settings):  # noqa: F811
    """The team's repository, bare, behind sshd; the hub allowed to reach it."""
    work = make_git_repo(tmp_path / "team", files={"app.py": "print('v1')\n"})
    bare = tmp_path / "forge" / "app.git"
    git("clone", "--quiet", "--bare", str(work), str(bare), cwd=tmp_path)
    settings.ATRIUM_UPSTREAM_HOSTS = [f"ssh://127.0.0.1:{ssh_server.port}"]
    return work, bare


def _link_room(client, url: str) -> Room:
    client.force_login(make_user("ada"))
    made = client.post(reverse("rooms:create"), {"name": "Linked", "source": "upstream", "upstream_url": url,
                                                 "upstream_branch": "main", "upstream_after_work": "push_main"})
    assert made.status_code == 302, made.content.decode()[:2000]
    return Room.objects.get()


def _host_fingerprint(server: SshServer) -> str:
    return subprocess.run(["ssh-keygen", "-lf", str(server.folder / "host_key.pub")], capture_output=True, text=True,
                          check=True).stdout.split()[1]


def _team_commits(work: Path, bare: Path, name: str, text: str) -> None:
    (work / name).write_text(text)
    git("add", "--all", cwd=work)
    git("commit", "--quiet", "-m", f"team: {name}", cwd=work)
    git("push", "--quiet", str(bare), "main", cwd=work)


@pytest.mark.django_db
def test_a_room_linked_over_ssh_takes_the_upstream_once_its_deploy_key_is_added(client, team, ssh_server,  # noqa: F811
                                                                               tmp_path, monkeypatch):
    work, bare = team
    scratch = tmp_path / "hub-tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the key file is written, for one call
    room = _link_room(client, ssh_server.url(bare))
    link = RoomUpstream.objects.get(room=room)
    repo = Path(room.repo_path)
    assert git("ls-tree", "--name-only", "main", cwd=repo).split() == []  # empty until the key is on the forge
    assert fingerprints(link.known_hosts) == [f"ssh-ed25519 {_host_fingerprint(ssh_server)}"]

    page = client.get(reverse("room", args=[room.slug])).content.decode()
    assert link.public_key in page and _host_fingerprint(ssh_server) in page
    secret_lines = [line for line in link.deploy_key.splitlines() if "PRIVATE KEY" not in line]
    assert "PRIVATE KEY" not in page and not any(line in page for line in secret_lines)

    said = bring_in(room)
    assert "refused the room's deploy key" in said and "deploy key with write access" in said
    assert git("ls-tree", "--name-only", "main", cwd=repo).split() == []

    ssh_server.authorize(link.public_key)
    said = bring_in(room)
    assert "now holds the upstream's main" in said, said
    assert (repo / "app.py").read_text() == "print('v1')\n"
    assert len(git("log", "-1", "--format=%P", "main", cwd=repo).split()) == 2  # both histories kept

    _team_commits(work, bare, "later.py", "x = 2\n")
    assert "main took in the upstream's main (1 commits" in bring_in(room)
    assert (repo / "later.py").read_text() == "x = 2\n"

    (repo / "app.py").write_text("print('v2')\n")
    git("commit", "--quiet", "-am", "the room's work", cwd=repo)
    assert "pushed to the upstream's main" in give_work(room, branch="main")
    assert git("show", "main:app.py", cwd=bare) == "print('v2')\n"

    assert list(scratch.iterdir()) == []  # no key file outlives its call
    told = " ".join(Message.objects.filter(room=room).values_list("text", flat=True))
    assert "PRIVATE KEY" not in told and not any(line in told for line in secret_lines)


@pytest.mark.django_db
def test_a_host_whose_key_changed_is_refused_until_an_administrator_scans_it_again(client, team,
                                                                                   ssh_server):  # noqa: F811
    work, bare = team
    room = _link_room(client, ssh_server.url(bare))
    link = RoomUpstream.objects.get(room=room)
    ssh_server.authorize(link.public_key)
    assert "now holds" in bring_in(room)

    ssh_server.restart(new_host_key=True)
    _team_commits(work, bare, "later.py", "x = 2\n")
    said = bring_in(room)
    assert "did not show the host key recorded" in said and not (Path(room.repo_path) / "later.py").exists()

    admin = get_user_model().objects.create_superuser("root-admin", password="pw")
    client.force_login(admin)
    done = client.post(reverse("admin:rooms_roomupstream_changelist"),
                       {"action": "scan_host_keys_again", "_selected_action": [link.pk]}, follow=True)
    assert _host_fingerprint(ssh_server) in done.content.decode()
    assert "took in the upstream's main" in bring_in(room)


@pytest.fixture
def fetching_worker(ssh_server, monkeypatch, request):  # noqa: F811
    """A real Celery worker that may reach the SSH forge (its settings come from its
    environment)."""
    monkeypatch.setenv("ATRIUM_UPSTREAM_HOSTS", f"ssh://127.0.0.1:{ssh_server.port}")
    return request.getfixturevalue("celery_worker")


@pytest.mark.django_db(transaction=True)
def test_fetch_now_is_a_members_and_a_worker_does_it(client, team, ssh_server, fetching_worker):  # noqa: F811
    _work, bare = team
    room = _link_room(client, ssh_server.url(bare))
    ssh_server.authorize(RoomUpstream.objects.get(room=room).public_key)
    viewer = make_user("vic")
    membership_add(room=room, actor=room.owner, username="vic", role="viewer")
    url = reverse("rooms:upstream_fetch", args=[room.slug])

    client.force_login(viewer)
    assert client.post(url).status_code == 403
    client.force_login(room.owner)
    assert client.post(url).status_code == 302
    deadline = time.monotonic() + 60
    while not Message.objects.filter(room=room, text__contains="now holds the upstream's main").exists():
        assert time.monotonic() < deadline, fetching_worker.hub_process.log_tail()
        time.sleep(0.2)
    assert (Path(room.repo_path) / "app.py").exists()
