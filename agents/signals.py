"""What agents tells the apps above it (rooms), which connect receivers from their
``AppConfig.ready``; agents never imports them (docs/architecture.md, "Layers").

``profile_changed``: a saved profile now behaves differently in the rooms that use it;
sent with ``profile``, ``actor`` (who saved it) and ``changes`` (what changed, in words),
inside the save's transaction.
"""

from __future__ import annotations

from django.dispatch import Signal

profile_changed = Signal()
