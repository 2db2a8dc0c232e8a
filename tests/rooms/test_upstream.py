"""A room's upstream, against a forge on this machine (git's own http-backend behind
basic authentication, and the subset of GitHub's and GitLab's APIs the hub uses): the
hosts the operator allows, the token in no command line or message, main moved only
forward and only to what an import may bring, pushes back, and proposals opened and
read back through the forges' REST APIs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rooms.forges import ForgeError, forge_for, open_proposal, proposal_state
from rooms.repository.git import git
from rooms.repository.upstream import (
    Upstream,
    UpstreamError,
    check_upstream_url,
    clone,
    export_commit,
    fetch_into_main,
    push,
)
from tests.rooms import upstream_server
from tests.rooms.factories import make_git_repo

TOKEN = "forge-token-" + "s3cr3t" * 4
BOUNDS = {"max_checkout_bytes": 1 << 30, "max_checkout_files": 10_000}


@pytest.fixture
def forge(tmp_path):
    root = tmp_path / "forge"
    work = make_git_repo(tmp_path / "team", files={"app.py": "print('v1')\n"})
    root.mkdir()
    git("clone", "--quiet", "--bare", str(work), str(root / "team" / "app.git"), cwd=tmp_path)
    served, server = upstream_server.start(root, TOKEN)
    try:
        yield served, work
    finally:
        server.shutdown()
        server.server_close()


def _team_commits(forge, work: Path, name: str, text: str) -> str:
    (work / name).write_text(text)
    git("add", "--all", cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", f"team: {name}", cwd=work)
    git("push", "--quiet", str(forge.root / "team" / "app.git"), "main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()


def _room_of(served, tmp_path: Path) -> tuple[Path, Upstream]:
    """A room's repository cloned from the forge's, checked out."""
    upstream = Upstream(url=f"{served.url}/team/app.git", branch="main", token=TOKEN)
    repo = tmp_path / "room"
    repo.mkdir()
    clone(upstream, repo)
    git("reset", "--quiet", "--hard", "main", cwd=repo)
    return repo, upstream


@pytest.mark.parametrize(("url", "allowed", "says"), [
    ("https://github.com/org/repo.git", ["github.com"], None),
    ("http://127.0.0.1:8080/org/repo.git", ["http://127.0.0.1:8080"], None),
    ("http://github.com/org/repo.git", ["github.com"], "not a host"),
    ("https://evil.example/org/repo.git", ["github.com"], "not a host"),
    ("https://github.com.evil.example/x.git", ["github.com"], "not a host"),
    ("https://user:pw@github.com/org/repo.git", ["github.com"], "no credentials"),
    ("file:///etc/passwd", ["github.com"], "https://"),
    ("ext::sh -c touch% /tmp/x", ["github.com"], "https://"),
    ("https://github.com/", ["github.com"], "names a repository"),
    ("https://github.com/org/repo.git?x=1", ["github.com"], "names a repository"),
    ("https://github.com/org/repo.git", [], "allows: none"),
])
def test_only_repositories_on_hosts_the_operator_allows(url, allowed, says):
    if says is None:
        assert check_upstream_url(url, allowed) == url
    else:
        with pytest.raises(ValueError, match=says):
            check_upstream_url(url, allowed)


def test_clone_fetch_and_push_with_the_token_and_nowhere_else(forge, tmp_path):
    served, work = forge
    repo, upstream = _room_of(served, tmp_path)
    assert (repo / "app.py").read_text() == "print('v1')\n"
    assert TOKEN not in (repo / ".git" / "config").read_text()

    moved = _team_commits(served, work, "team.txt", "from the team\n")
    said = fetch_into_main(repo, upstream, main="main", **BOUNDS)
    assert "moved forward" in said and git("rev-parse", "main", cwd=repo).strip() == moved
    assert (repo / "team.txt").exists()  # main's checkout moved with it
    assert fetch_into_main(repo, upstream, main="main", **BOUNDS) == "up to date with the upstream"

    (repo / "ours.txt").write_text("merged work\n")
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "ours", cwd=repo)
    push(repo, upstream, "refs/heads/main", "main")
    assert git("rev-parse", "main", cwd=served.root / "team" / "app.git").strip() == \
        git("rev-parse", "main", cwd=repo).strip()
    git_requests = [r for r in served.requests if "/team/app.git/" in r["path"]]
    assert git_requests and all(TOKEN not in r["path"] for r in git_requests)


def test_a_wrong_token_is_a_clear_error_without_the_token(forge, tmp_path):
    served, _work = forge
    wrong = "wrong-" + TOKEN
    repo = tmp_path / "room"
    repo.mkdir()
    with pytest.raises(UpstreamError) as refused:
        clone(Upstream(url=f"{served.url}/team/app.git", branch="main", token=wrong), repo)
    assert wrong not in str(refused.value) and "refused the token" in str(refused.value)


def test_both_moved_on_merges_a_conflict_leaves_main_and_hostile_content_is_refused(forge, tmp_path):
    served, work = forge
    repo, upstream = _room_of(served, tmp_path)
    (repo / "local.txt").write_text("local\n")
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "local", cwd=repo)
    ours = git("rev-parse", "main", cwd=repo).strip()
    theirs = _team_commits(served, work, "theirs.txt", "theirs\n")
    said = fetch_into_main(repo, upstream, main="main", **BOUNDS)
    assert "took in the upstream's main" in said
    for parent in (ours, theirs):
        assert git("merge-base", "--is-ancestor", parent, "main", cwd=repo, check=False) == ""
    assert (repo / "theirs.txt").exists() and (repo / "local.txt").exists()
    push(repo, upstream, "refs/heads/main", "main")  # a fast-forward for the upstream now

    (repo / "app.py").write_text("print('ours')\n")
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-am", "ours", cwd=repo)
    git("pull", "--quiet", "--ff-only", str(served.root / "team" / "app.git"), "main", cwd=work)
    _team_commits(served, work, "app.py", "print('theirs')\n")
    ours = git("rev-parse", "main", cwd=repo).strip()
    assert "does not merge into main cleanly (app.py)" in fetch_into_main(repo, upstream, main="main", **BOUNDS)
    assert git("rev-parse", "main", cwd=repo).strip() == ours
    with pytest.raises(UpstreamError, match="rejected|fetch first|behind"):
        push(repo, upstream, "refs/heads/main", "main")

    git("reset", "--quiet", "--hard", "HEAD~1", cwd=repo)
    sub = git("rev-parse", "HEAD", cwd=work).strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"160000,{sub},vendored"], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.name=team", "-c", "user.email=team@example.com", "commit", "--quiet", "-m",
                    "a submodule"], cwd=work, check=True)  # the team's own git, which records submodules
    git("push", "--quiet", str(served.root / "team" / "app.git"), "main", cwd=work)
    with pytest.raises(UpstreamError, match="submodule"):
        fetch_into_main(repo, upstream, main="main", **BOUNDS)
    assert not (repo / "vendored").exists()


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_proposal_is_opened_and_read_back(forge, kind):
    served, _work = forge
    api = f"{served.url}/api/v3" if kind == "github" else f"{served.url}/api/v4"
    on_forge = forge_for(kind, f"{served.url}/team/app.git", TOKEN, api_url=api)
    opened = open_proposal(on_forge, head="atrium/session-3", base="main", title="Fix the test", body="Done.")
    assert opened.number == 1 and opened.state == "open" and opened.url.startswith(served.url)
    sent = served.requests[-1]
    assert ("Authorization" in sent["headers"]) == (kind == "github")
    assert TOKEN not in sent["path"] and TOKEN.encode() not in sent["body"]
    served.proposals[1]["state"] = "closed"
    if kind == "github":
        served.proposals[1]["merged_at"] = "2026-12-05T12:00:00Z"
    else:
        served.proposals[1]["state"] = "merged"
    assert proposal_state(on_forge, 1).state == "merged"
    with pytest.raises(ForgeError, match="refused \\(401\\)"):
        proposal_state(forge_for(kind, f"{served.url}/team/app.git", "wrong", api_url=api), 1)


def _diverged_room(served, work, tmp_path) -> tuple[Path, Upstream]:
    repo, upstream = _room_of(served, tmp_path)
    (repo / ".atrium").mkdir()
    (repo / ".atrium" / "intent.md").write_text("people's words\n")
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "the hub's intent", cwd=repo)
    return repo, upstream


def test_the_merge_path_refuses_hostile_content_and_keeps_no_ref_of_it(forge, tmp_path):
    served, work = forge
    repo, upstream = _diverged_room(served, work, tmp_path)
    ours = git("rev-parse", "main", cwd=repo).strip()
    sub = git("rev-parse", "HEAD", cwd=work).strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"160000,{sub},vendored"], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.name=team", "-c", "user.email=team@example.com", "commit", "--quiet", "-m",
                    "a submodule"], cwd=work, check=True)
    git("push", "--quiet", str(served.root / "team" / "app.git"), "main", cwd=work)
    with pytest.raises(UpstreamError, match="submodule"):
        fetch_into_main(repo, upstream, main="main", **BOUNDS)
    assert git("rev-parse", "main", cwd=repo).strip() == ours
    assert git("for-each-ref", "refs/atrium", cwd=repo).strip() == ""  # nothing left to reach it by


def test_what_goes_upstream_is_the_work_on_its_newest_tip_without_the_hubs_files(forge, tmp_path):
    served, work = forge
    repo, upstream = _diverged_room(served, work, tmp_path)
    (repo / "feature.py").write_text("print('work')\n")
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "the work", cwd=repo)
    theirs = _team_commits(served, work, "theirs.txt", "meanwhile\n")  # the team moved on: still a fast-forward
    exported = export_commit(repo, upstream, "main")
    push(repo, upstream, exported, "main")
    bare = served.root / "team" / "app.git"
    assert git("rev-parse", "main^", cwd=bare).strip() == theirs
    files = git("ls-tree", "-r", "--name-only", "main", cwd=bare).split()
    assert {"feature.py", "theirs.txt", "app.py"} <= set(files) and not any(f.startswith(".atrium") for f in files)
    assert "people's words" not in git("log", "-p", "main", cwd=bare)


def test_a_forge_answering_oddly_or_not_at_all_is_a_forge_error(forge):
    served, _work = forge
    odd = forge_for("github", f"{served.url}/team/app.git", TOKEN, api_url=f"{served.url}/elsewhere")
    with pytest.raises(ForgeError, match="refused \\(40"):
        proposal_state(odd, 1)
    gone = forge_for("github", "http://127.0.0.1:9/team/app.git", TOKEN, api_url="http://127.0.0.1:9/api/v3")
    with pytest.raises(ForgeError, match="could not be reached"):
        proposal_state(gone, 1)
    control = forge_for("github", f"{served.url}/team/app.git", TOKEN, api_url=f"{served.url}/api/v3\x01")
    with pytest.raises(ForgeError, match="could not be reached"):
        proposal_state(control, 1)
    assert TOKEN not in repr(odd)


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_proposal_already_open_for_the_branch_is_found_not_refused(forge, kind):
    served, _work = forge
    api = f"{served.url}/api/v3" if kind == "github" else f"{served.url}/api/v4"
    on_forge = forge_for(kind, f"{served.url}/team/app.git", TOKEN, api_url=api)
    first = open_proposal(on_forge, head="atrium/session-5", base="main", title="T", body="B")
    again = open_proposal(on_forge, head="atrium/session-5", base="main", title="T", body="B")  # a 422 / 409 first
    assert again.number == first.number and len(served.proposals) == 1
