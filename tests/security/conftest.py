from tests.agents.conftest import hub_workers  # noqa: F401 - real Celery workers, as there
