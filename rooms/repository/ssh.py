"""SSH for a room's upstream: the address an SSH URL names, the room's own deploy key,
the host's keys as first seen, and the one ``ssh`` git may start with them.

A room linked over SSH gets an Ed25519 key pair of its own (its public half is shown to
the room, to be added to the repository on the forge as a deploy key); the private half
stays in the hub's database and is written, for one git call, to a file only the hub
reads, in a folder removed after. The host's keys are scanned once, when the room is
linked, and every later connection must meet the same keys (no agent, no user config,
no proxy command, no forwarding, no prompt).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SCAN_TIMEOUT_SECONDS = 10
DEFAULT_PORT = 22
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                   r"[A-Za-z0-9])?)*")
_PATH = re.compile(r"[A-Za-z0-9._~/+-]+")
_KNOWN_HOST_LINE = re.compile(r"(\S+) ((?:ssh|ecdsa-sha2)-[a-z0-9-]+) ([A-Za-z0-9+/]+={0,2})")


@dataclass(frozen=True, slots=True)
class SshAddress:
    user: str
    host: str
    port: int
    path: str  # as the URL gives it: scp-like paths are the login's, ssh:// paths the server's

    @property
    def origin(self) -> str:
        return f"ssh://{self.host}:{self.port}"


def ssh_address(url: str) -> SshAddress | None:
    """The address of an SSH URL (``ssh://[user@]host[:port]/path`` or git's scp-like
    ``user@host:path``); None for any other kind of URL; ValueError saying what is wrong
    with an SSH URL git would not take as one, or that could be read as an option."""
    if url.startswith("ssh://"):
        parts = urlsplit(url)
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise ValueError("The SSH URL's port is not a port number.") from None
        user, host, path = parts.username or "git", parts.hostname or "", parts.path.lstrip("/")
        if parts.password or parts.query or parts.fragment:
            raise ValueError("An SSH URL is ssh://user@host[:port]/owner/name.git: no password, no query.")
    elif "://" not in url and re.fullmatch(r"[^/:]+:[^:]+", url):
        login, _, path = url.partition(":")
        user, _, host = login.rpartition("@")
        user, port = user or "git", DEFAULT_PORT
    else:
        return None
    if not _USER.fullmatch(user) or not _HOST.fullmatch(host):
        raise ValueError("The SSH URL's user or host is not one git would connect to.")
    if not path or path.startswith("-") or not _PATH.fullmatch(path) or ".." in path.split("/"):
        raise ValueError("The SSH URL names a repository: git@host:owner/name.git.")
    return SshAddress(user=user, host=host, port=port, path=path)


def new_deploy_key() -> str:
    """A new Ed25519 private key in OpenSSH's format (its public half: ``public_half``)."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()).decode()


def public_half(private_key: str, comment: str = "") -> str:
    """The ``ssh-ed25519 AAAA… comment`` line a forge takes as a deploy key."""
    key = serialization.load_ssh_private_key(private_key.encode(), password=None)
    line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return f"{line} {comment}".strip()


def scan_host_keys(address: SshAddress, timeout: float = SCAN_TIMEOUT_SECONDS) -> str:
    """The host's public keys as ``known_hosts`` lines (``ssh-keyscan``); ValueError when
    the host does not answer with any."""
    try:
        scanned = subprocess.run(
            ["ssh-keyscan", "-T", str(int(timeout)), "-p", str(address.port), "--", address.host],
            capture_output=True, text=True, timeout=timeout + 5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        scanned = ""
    lines = sorted({match.group(0) for line in scanned.splitlines() if (match := _KNOWN_HOST_LINE.fullmatch(line))})
    if not lines:
        raise ValueError(f"{address.host} did not answer over SSH on port {address.port}.")
    return "\n".join(lines) + "\n"


def fingerprints(known_hosts: str) -> list[str]:
    """Each recorded key as ``ssh-keygen -l`` names it: its type and ``SHA256:…``."""
    found = []
    for line in known_hosts.splitlines():
        if match := _KNOWN_HOST_LINE.fullmatch(line):
            digest = hashlib.sha256(base64.b64decode(match.group(3))).digest()
            found.append(f"{match.group(2)} SHA256:{base64.b64encode(digest).decode().rstrip('=')}")
    return found


@contextlib.contextmanager
def ssh_command(private_key: str, known_hosts: str, timeout: float) -> Iterator[str]:
    """The ``core.sshCommand`` for one git call: only this key, only these host keys,
    nothing from any config, agent or terminal. Its files go when the block ends."""
    with tempfile.TemporaryDirectory(prefix="atrium-ssh-") as folder:
        key, hosts = Path(folder) / "key", Path(folder) / "known_hosts"
        key.touch(mode=0o600)
        key.write_text(private_key if private_key.endswith("\n") else private_key + "\n")
        hosts.write_text(known_hosts)
        options = {
            "IdentitiesOnly": "yes", "IdentityAgent": "none", "BatchMode": "yes", "StrictHostKeyChecking": "yes",
            "UserKnownHostsFile": str(hosts), "GlobalKnownHostsFile": "/dev/null", "UpdateHostKeys": "no",
            "CheckHostIP": "no", "ProxyCommand": "none", "ProxyJump": "none", "ForwardAgent": "no",
            "ForwardX11": "no", "ClearAllForwardings": "yes", "PermitLocalCommand": "no", "ControlMaster": "no",
            "ControlPath": "none", "ConnectTimeout": str(int(min(timeout, 60))), "LogLevel": "ERROR",
        }
        yield shlex.join(["ssh", "-F", "/dev/null", "-i", str(key),
                          *(f"-o{name}={value}" for name, value in options.items())])
