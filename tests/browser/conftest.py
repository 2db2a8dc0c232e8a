"""Browser tests that need real workers with their own replay folder use the agents' fixture."""

from tests.session_fixtures import hub_workers  # noqa: F401
