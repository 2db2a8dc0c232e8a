"""A real ``sshd`` on this machine serving bare repositories, as a forge's SSH side is:
only public keys, only the keys a test adds (a person adding a room's deploy key on the
forge), nothing forwarded. Started with a host key of its own; ``restart`` with a new
one plays a host whose key changed (or a machine in the middle)."""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class SshServer:
    folder: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def user(self) -> str:
        return getpass.getuser()

    def url(self, repository: Path) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{repository}"

    def authorize(self, public_key: str) -> None:
        with (self.folder / "authorized_keys").open("a") as keys:
            keys.write(public_key.strip() + "\n")

    def start(self, new_host_key: bool = False) -> None:
        host_key = self.folder / "host_key"
        if new_host_key or not host_key.exists():
            host_key.unlink(missing_ok=True)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
        (self.folder / "authorized_keys").touch()
        config = self.folder / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}", f"PidFile {self.folder / 'sshd.pid'}",
            "StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes", "PermitRootLogin prohibit-password", "AllowTcpForwarding no",
            "AllowAgentForwarding no", "X11Forwarding no", "PermitTTY no", f"AllowUsers {self.user}",
        ]) + "\n")
        Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation folder, when run as root
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL,
                                        stderr=(self.folder / "sshd.log").open("ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not start: {(self.folder / 'sshd.log').read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self, *, new_host_key: bool) -> None:
        self.stop()
        self.start(new_host_key=new_host_key)


@pytest.fixture
def ssh_server(tmp_path) -> SshServer:
    if not Path(SSHD).exists():
        pytest.fail("sshd is needed for SSH upstream tests (Debian's openssh-server; .ci/run installs it)")
    folder = tmp_path / "sshd"
    folder.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = SshServer(folder=folder, port=port)
    server.start()
    yield server
    server.stop()
