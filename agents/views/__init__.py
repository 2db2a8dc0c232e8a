"""Agent pages: profiles, and the room's agents panel."""
