"""The git remote's pre-receive check: ``python -m rooms.repository.pre_receive``, run by
``git receive-pack`` for a person's or a worker's push (the only hook the hub's git runs, from a folder
of the hub's, never the repository's). It reads the ref updates on stdin and the push's
objects from git's quarantine, and refuses the whole push, saying why on stderr (the
person's git prints it as ``remote: …``), when ``pushes.check_push`` does.

What it needs from the hub comes in its environment (``ATRIUM_PUSH_*``); it imports no
Django and reads no database, so it starts in milliseconds and decides in plain Python.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rooms.repository.git import GitError, reading_quarantine
from rooms.repository.pushes import PushRefused, RefUpdate, check_push


def main() -> int:
    updates = [RefUpdate.parse(line) for line in sys.stdin.read().splitlines() if line.strip()]
    try:
        with reading_quarantine(dict(os.environ)):
            # receive-pack runs its hooks in the repository's git folder.
            check_push(Path.cwd(), updates, main=os.environ["ATRIUM_PUSH_MAIN"],
                       max_checkout_bytes=int(os.environ["ATRIUM_PUSH_MAX_BYTES"]),
                       max_checkout_files=int(os.environ["ATRIUM_PUSH_MAX_FILES"]),
                       only_ref=os.environ["ATRIUM_PUSH_ONLY_REF"])  # empty: a person's push
    except PushRefused as exc:
        print(f"Atrium refused this push:\n{exc}", file=sys.stderr)
        return 1
    except GitError as exc:
        print(f"Atrium could not check this push: {exc.stderr or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
