"""The Django side of a session's run: ``run.py`` takes a turn off the queue and drives
the plain step loop (``sessions.runtime``) through ``host.py``, which implements its
ports with the database, the worktree and the room."""
