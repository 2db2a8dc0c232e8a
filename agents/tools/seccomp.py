"""The system calls a sandboxed command is refused, as a seccomp program bubblewrap loads
(``--seccomp``) before it starts the command.

Two kinds. What would take the machine's disk unseen: ``fallocate`` reserves any amount
at once, past every count (programs fall back to writing, which the per-file limit and
the disk count see). What opens the kernel's larger surface to a sandboxed root: new
namespaces (a user namespace gives its creator every capability inside it), the
keyring, BPF, io_uring, perf events, userfaultfd, module and mount calls. The program
is made with libseccomp (pyseccomp); system calls of another architecture (32-bit
calls on a 64-bit machine) kill the process.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import lru_cache

CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
REFUSED = (
    "unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "pivot_root", "move_mount",
    "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "swapon", "swapoff", "reboot", "acct", "quotactl", "open_by_handle_at",
    "name_to_handle_at", "lookup_dcookie", "syslog",
)


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded: no sandbox is made without its program."""


@lru_cache(maxsize=1)
def program() -> bytes:
    """The compiled program (classic BPF), made once per process."""
    try:
        import pyseccomp as seccomp
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
    except (ImportError, OSError, RuntimeError) as exc:
        raise SeccompUnavailable(f"libseccomp cannot be loaded ({exc})") from None
    # Falls back to writing, which the per-file limit and the disk count see.
    rules.add_rule(seccomp.ERRNO(errno.EOPNOTSUPP), "fallocate")
    # clone3 passes its flags in memory a filter cannot read: callers fall back to clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in CLONE_NAMESPACES:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for name in REFUSED:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.flush()
        os.lseek(out.fileno(), 0, os.SEEK_SET)
        return out.read()
