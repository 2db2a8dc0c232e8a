"""The session's plain runtime: the step loop, the end of a turn and the rules they
decide with (states, approvals, reviews, mentions), over plain data and narrow ports
(``ports.py``). No Django here (an import contract holds it); ``sessions.worker`` is
the other side of the ports: the database, the worktree, Celery."""
