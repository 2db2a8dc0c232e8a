"""Room pages: the room list, a new room, its people and history (``rooms``), its agents panel (``agents``)."""
