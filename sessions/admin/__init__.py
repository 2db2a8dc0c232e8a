"""Tasks, sessions and their records in the admin (``work``), and their ledgers (``ledger``)."""

from sessions.admin import ledger, proposals, work  # noqa: F401 - each registers its models
