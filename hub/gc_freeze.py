"""A hub process's startup objects out of the garbage collector's reach.

A web process holds some 300,000 objects once started (modules, classes, functions,
URL patterns), all alive for good; each full collection walked every one of them:
185-215 ms on the development box, during which the process served nothing (in the
gateway's step bench a request that met one took 280-450 ms of CPU, not about 20). Frozen, they are left out
of every collection, which walks only what was made since.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    gc.collect()  # what startup threw away is collected first, not frozen with the rest
    gc.freeze()
