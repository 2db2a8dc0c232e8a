# Benchmarks that run real workers use the agents' fixtures.
from tests.agents.conftest import demo_room, hub_workers, person  # noqa: F401
