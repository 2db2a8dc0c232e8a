"""The agent runtime. Decision logic (states, approvals, the step machine) is plain
Python; `host.py` and `worker.py` connect it to the database, Celery and the room."""
