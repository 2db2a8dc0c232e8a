"""The folder of a room's repository that only the hub writes: its tasks' intent files.
No session's merge and no push may change it. Apart, so the pre-receive check, which
runs once per push, starts without importing the rest of the repository code."""

HUB_OWNED = ".atrium"
