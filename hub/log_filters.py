"""What the hub's log keeps of a request that was the client's fault."""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """A 4xx (a denied permission, a page not found) is one line: its traceback says
    nothing an operator can act on, and Django logged it twice (its own handler and the
    root's), burying what matters. A 5xx keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
