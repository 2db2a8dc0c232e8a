"""The SQLite conversation lock: conversations one process serves never wait for each
other, even on a shared lock file; one conversation's requests, in threads or in
processes, are served one at a time."""

import contextlib
import fcntl
import hashlib
import itertools
import subprocess
import sys
import threading
import time
from pathlib import Path

from endpoint import turn_lock


def _stripe(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % turn_lock.STRIPES


def _sharing_a_stripe() -> tuple[str, str]:
    seen: dict[int, str] = {}
    for n in itertools.count():
        name = f"1:conversation-{n}"
        if (stripe := _stripe(name)) in seen:
            return seen[stripe], name
        seen[stripe] = name
    raise AssertionError("unreachable")


def _held_together(folder: Path, names: list[str]) -> int:
    """How many of ``names``' holders held their lock at once, at most."""
    inside, most, guard = 0, 0, threading.Lock()
    everyone_in = threading.Barrier(len(names), timeout=2)

    def hold(name: str) -> None:
        nonlocal inside, most
        with turn_lock.one_request_at_a_time(folder, name):
            with guard:
                inside += 1
                most = max(most, inside)
            with contextlib.suppress(threading.BrokenBarrierError):  # the most is what it is
                everyone_in.wait()
            time.sleep(0.05)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=hold, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    return most


def _free(folder: Path, name: str) -> bool:
    """Whether ``name``'s lock file is free (a second open of it conflicts with a
    holder's, this process's included)."""
    with open(folder / f"gateway-{_stripe(name)}.lock", "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_conversations_on_one_lock_file_are_served_at_once(tmp_path):
    first, second = _sharing_a_stripe()
    assert _stripe(first) == _stripe(second)
    assert _held_together(tmp_path, [first, second, "1:another"]) == 3
    assert not turn_lock._conversations
    assert all(not stripe.holders and stripe.handle is None for stripe in turn_lock._stripes.values())


def test_the_file_is_held_until_the_last_conversation_on_it_is_let_go(tmp_path):
    first, second = _sharing_a_stripe()
    with turn_lock.one_request_at_a_time(tmp_path, second):
        with turn_lock.one_request_at_a_time(tmp_path, first):
            assert not _free(tmp_path, first)
        assert not _free(tmp_path, first)
    assert _free(tmp_path, first)


def test_the_same_stripe_in_another_folder_takes_that_folders_file(tmp_path):
    one, other = tmp_path / "one", tmp_path / "other"
    first, second = _sharing_a_stripe()
    with turn_lock.one_request_at_a_time(one, first), turn_lock.one_request_at_a_time(other, second):
        assert not _free(one, first)
        assert not _free(other, second)


def test_one_conversation_is_served_one_request_at_a_time(tmp_path):
    assert _held_together(tmp_path, ["1:same"] * 3) == 1


HOLDER = """
import sys, time
from pathlib import Path
from endpoint import turn_lock
with turn_lock.one_request_at_a_time(Path(sys.argv[1]), sys.argv[2]):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def test_another_process_waits_for_the_conversation_and_gets_it_when_let_go(tmp_path):
    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), "1:shared", "1.0"],
                              cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        began = time.monotonic()
        with turn_lock.one_request_at_a_time(tmp_path, "1:shared"):
            waited = time.monotonic() - began
        assert holder.wait(10) == 0
    finally:
        holder.kill()
        holder.stdout.close()
    assert waited > 0.5
    assert _free(tmp_path, "1:shared")  # the file lock went with the last holder
