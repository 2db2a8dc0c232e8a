from tests.agents.runtime.test_workers import hub_workers  # noqa: F401 - real Celery workers, as there
