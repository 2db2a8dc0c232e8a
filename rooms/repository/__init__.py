"""The room repository: the hub-owned git repository behind every room.

One concept, one package, in the app that owns rooms (not in the entry point):

- ``git``: running git with the hub's identity and errors;
- ``lock``: the room lock, one writer at a time on a room's main checkout;
- ``prepare``: building a room's repository (new, clone, bundle, template);
- ``worktrees``: a session's branch and checkout, and merging it into main;
- ``intent``: a task's intent file, committed to the repository.

None of these imports a model; callers pass paths. Agents import from here, never the
reverse (the layering in docs/architecture.md).
"""
