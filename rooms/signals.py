"""What rooms tell the apps above them (sessions), which connect receivers from their
``AppConfig.ready``. Rooms never imports sessions (docs/architecture.md, "Layers"); these
are the only places where a room's events reach it.

``message_posted``: a message was stored; sent with ``message``, inside the post's
transaction, so a receiver's writes (waking the sessions a steer or mention reaches)
commit or roll back with the message. Receivers send nothing out of the process before
commit.

``member_removed``: a person left a room; sent with ``room_id`` and ``user_id`` inside the
removal's transaction (sessions closes their session sockets after commit).
"""

from __future__ import annotations

from django.dispatch import Signal

message_posted = Signal()
member_removed = Signal()
