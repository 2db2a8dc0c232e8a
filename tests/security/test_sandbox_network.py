"""Issue 24, from the attacker's side: "Commands may use the network" used to mean the
machine's network: a command reached PostgreSQL on 127.0.0.1 (trust auth) and the hub's
Redis. Now a networked command gets a namespace of its own behind user-mode NAT. These
tests run real commands through the ToolBox, as sessions do, next to a test host of
their own in a network namespace made here (a public-range address and a private one):
the command reaches the public one and nothing of the machine: not its loopback, not
the hub's PostgreSQL or Redis, not its own address, not a private range."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit

import pytest

from agents.tools import ToolBox
from tests.agents.tools.conftest import call

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("slirp4netns") is None,
                                reason="needs root, iproute2 and slirp4netns to make a test host")

SERVER = "import http.server as h; h.HTTPServer(('0.0.0.0', 8080), h.SimpleHTTPRequestHandler).serve_forever()"


@pytest.fixture
def test_host(tmp_path):
    """A host of this test's own: a network namespace joined to this machine by a veth
    pair, serving HTTP on 198.18.<n>.1 (a benchmarking range, not a private one) and on
    10.213.<n>.1 (a private one), both reachable from the machine itself."""
    n = int(uuid.uuid4().hex[:2], 16) % 250 + 1
    name, veth = f"atrium-th-{uuid.uuid4().hex[:6]}", f"ath{uuid.uuid4().hex[:6]}"
    public, private = f"198.18.{n}.1", f"10.213.{n}.1"
    commands = [
        ["ip", "netns", "add", name],
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name],
        ["ip", "addr", "add", f"198.18.{n}.2/30", "dev", veth],
        ["ip", "link", "set", veth, "up"],
        ["ip", "-n", name, "addr", "add", f"{public}/30", "dev", "eth0"],
        ["ip", "-n", name, "addr", "add", f"{private}/32", "dev", "eth0"],
        ["ip", "-n", name, "link", "set", "eth0", "up"],
        ["ip", "-n", name, "link", "set", "lo", "up"],
        ["ip", "-n", name, "route", "add", "default", "via", f"198.18.{n}.2"],
        ["ip", "route", "add", f"{private}/32", "via", public],
    ]
    try:
        for command in commands:
            subprocess.run(command, check=True, capture_output=True)
        (tmp_path / "www").mkdir()
        (tmp_path / "www" / "index.html").write_text("hello from the test host\n")
        server = subprocess.Popen(["ip", "netns", "exec", name, sys.executable, "-c", SERVER], cwd=tmp_path / "www",
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while subprocess.run(["curl", "-s", "-m", "1", f"http://{private}:8080/"], capture_output=True).returncode:
            assert time.monotonic() < deadline, "the test host did not come up"
            time.sleep(0.1)
        yield public, private
    finally:
        if "server" in locals():
            server.kill()
            server.wait()
        subprocess.run(["ip", "route", "del", f"{private}/32"], capture_output=True)
        subprocess.run(["ip", "link", "del", veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def _hub_services() -> list[str]:
    found = []
    for url in (os.environ.get("REDIS_URL", ""), os.environ.get("DATABASE_URL", "")):
        parts = urlsplit(url)
        if parts.scheme.startswith(("redis", "postgres")) and parts.hostname:
            found.append(f"{parts.hostname}:{parts.port or (6379 if parts.scheme.startswith('redis') else 5432)}")
    return found or ["127.0.0.1:5432", "127.0.0.1:6379"]


def _own_addresses() -> list[str]:
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines()
            if not line.split()[3].startswith(("127.", "198.18.", "10.213."))]


PROBE = ("for t in {targets}; do python3 -c \"import socket,sys; h,p=sys.argv[1].rsplit(':',1); "
         "socket.create_connection((h,int(p)),3); print('REACHED', sys.argv[1])\" $t 2>/dev/null "
         "|| echo \"refused $t\"; done")


@pytest.fixture
def machine_listener():
    """A service of this machine listening on every address (as a database on 0.0.0.0
    would): the machine itself reaches it through each of them."""
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen(16)
        port = server.getsockname()[1]
        for address in ["127.0.0.1", *_own_addresses()]:
            socket.create_connection((address, port), 2).close()
        yield port


def test_a_networked_command_reaches_the_internet_and_nothing_of_the_machine(make_box, test_host, machine_listener):
    public, private = test_host
    box: ToolBox = make_box(network=True)
    port = machine_listener
    targets = [f"{public}:8080", f"{private}:8080", *_hub_services(), f"127.0.0.1:{port}", f"10.0.2.2:{port}",
               *(f"{address}:{port}" for address in _own_addresses())]
    outcome = box.execute(call("shell", command=PROBE.format(targets=" ".join(targets))))
    assert not outcome.is_error, outcome.text
    reached = [line.split()[1] for line in outcome.text.splitlines() if line.startswith("REACHED")]
    assert reached == [f"{public}:8080"], outcome.text
    page = box.execute(call("shell", command=f"curl -s -m 5 http://{public}:8080/"))
    assert "hello from the test host" in page.text
    # From the machine itself every one of them answers: it is the sandbox that stops them.
    assert subprocess.run(["curl", "-s", "-m", "2", f"http://{private}:8080/"], capture_output=True).returncode == 0


def test_a_command_without_the_network_reaches_not_even_the_internet(make_box, test_host):
    public, _private = test_host
    outcome = make_box().execute(call("shell", command=PROBE.format(targets=f"{public}:8080")))
    assert "REACHED" not in outcome.text and f"refused {public}:8080" in outcome.text


def test_a_hub_of_its_own_user_gives_networked_commands_the_internet_and_nothing_of_the_machine(
        as_an_ordinary_user, test_host, machine_listener):
    """Not root (as the Docker image runs), the namespace is the sandbox's user namespace's:
    slirp4netns and the routes join it there, with the same result."""
    public, private = test_host
    port = machine_listener
    targets = [f"{public}:8080", f"{private}:8080", *_hub_services(), f"127.0.0.1:{port}", f"10.0.2.2:{port}",
               *(f"{address}:{port}" for address in _own_addresses())]
    place = as_an_ordinary_user.place("room", network=True)
    answer = as_an_ordinary_user([place], [[0, PROBE.format(targets=" ".join(targets))],
                                           [0, f"curl -s -m 5 http://{public}:8080/"]])
    probe, page = answer["results"]
    assert answer["uid"] == 65534 and not answer["drops_user"] and probe["code"] == 0, answer
    reached = [line.split()[1] for line in probe["out"].splitlines() if line.startswith("REACHED")]
    assert reached == [f"{public}:8080"], probe["out"]
    assert "hello from the test host" in page["out"], page["out"]
