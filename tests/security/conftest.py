from tests.agents.providers.conftest import wire  # noqa: F401 - a local server speaking the providers wire protocols
from tests.agents.tools.conftest import make_box, state_dir, worktree  # noqa: F401 - the ToolBox as sessions build it
from tests.session_fixtures import hub_workers  # noqa: F401 - real Celery workers, as there
