# Benchmarks that run real workers use the agents' fixtures.
from tests.session_fixtures import demo_room, hub_workers, person  # noqa: F401
