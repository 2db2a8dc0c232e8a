"""The room repository as a git remote: people clone, pull and push it over git's smart
HTTP (``smart_http``, git's own ``http-backend``) with personal access tokens made on
their profile page (``tokens``); a push goes through the room's checks
(``rooms.repository.pushes``) under the room lock."""
