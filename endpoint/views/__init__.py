"""The endpoint's views: the model API (``api``) and the room's keys panel (``key_pages``)."""
