"""docker/ cannot run here, so its promises are checked by reading it.

The settings are read with ``ast``: every variable hub/settings.py takes from the
environment is found, and those without a safe production default must be given to
the hub's containers; compose must not name variables the settings never read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
SETTINGS = ROOT / "hub" / "settings.py"

ENV_READERS = {"env", "envbool", "envint", "envfloat", "envlist", "envsecret"}
HUB_SERVICES = {"migrate", "web", "worker", "sweeper", "beat"}  # built from the Atrium image
LONG_RUNNING = {"postgres", "redis", "web", "worker", "sweeper", "beat"}


def settings_env_reads() -> dict[str, dict[str, Any]]:
    """{NAME: {"has_default", "default" (if literal), "depends_on_the_setup", "secret"}} per variable."""
    reads: dict[str, dict[str, Any]] = {}
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if isinstance(func, ast.Attribute) and func.attr in {"get", "getenv"}:
            name = "os.environ"
        if name not in ENV_READERS and name != "os.environ":
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        default_node = node.args[1] if len(node.args) > 1 else None
        literal = default_node.value if isinstance(default_node, ast.Constant) else None
        reads[first.value] = {
            "has_default": default_node is not None,
            "default": literal,
            "depends_on_the_setup": default_node is not None and _depends_on_the_setup(default_node),
            "secret": name == "envsecret",
        }
    return reads


def _depends_on_the_setup(node: ast.AST) -> bool:
    """A default that differs between a local hub and a deployment (LOCAL, or DEBUG)."""
    return any(isinstance(n, ast.Name) and n.id in {"DEBUG", "LOCAL"} for n in ast.walk(node))


def needs_a_value_in_production(read: dict[str, Any]) -> bool:
    """A secret, no default, an empty one, or one that differs on a local hub."""
    return read["secret"] or not read["has_default"] or read["depends_on_the_setup"] or read["default"] == ""


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def test_the_settings_reader_finds_the_variables_we_know_about():
    reads = settings_env_reads()
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "DEBUG"} <= reads.keys()
    assert reads["SECRET_KEY"]["secret"]
    assert needs_a_value_in_production(reads["ALLOWED_HOSTS"])
    assert not needs_a_value_in_production(reads["ATRIUM_MAX_MESSAGE_BYTES"])


def test_compose_has_postgres_redis_web_worker_beat_and_a_one_shot_migrate(compose):
    assert set(compose["services"]) == LONG_RUNNING | {"migrate"}
    assert compose["services"]["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert compose["services"]["migrate"]["restart"] == "no"


def test_every_long_running_service_has_a_healthcheck(compose):
    for name in LONG_RUNNING:
        check = compose["services"][name].get("healthcheck", {})
        assert check.get("test"), name
        assert not check.get("disable"), name


def test_hub_services_start_after_migrations_and_healthy_databases(compose):
    for name in HUB_SERVICES - {"migrate"}:
        depends = compose["services"][name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name


def test_processes_are_daphne_celery_worker_and_celery_beat(compose):
    services = compose["services"]
    assert services["web"]["command"][0] == "daphne"
    assert services["web"]["command"][-1] == "hub.asgi:application"
    assert services["worker"]["command"][:4] == ["celery", "-A", "hub", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "hub", "beat"]


def test_the_sweep_has_its_own_worker_on_its_own_queue(compose):
    """Sessions filling every worker slot never delay beat's sweep (hub/settings.py routes it)."""
    worker, sweeper = compose["services"]["worker"]["command"], compose["services"]["sweeper"]["command"]
    queue_of = {name: command[command.index("--queues") + 1] for name, command in
                (("worker", worker), ("sweeper", sweeper))}
    assert queue_of == {"worker": "${CELERY_QUEUE:-atrium}",
                        "sweeper": "${CELERY_SWEEP_QUEUE:-${CELERY_QUEUE:-atrium}-sweep}"}
    for service in ("web", "worker", "sweeper", "beat"):
        assert compose["services"][service]["environment"]["CELERY_SWEEP_QUEUE"] == queue_of["sweeper"], service


def test_only_celery_processes_keep_database_connections(compose):
    """Django: persistent connections leak under ASGI (a new thread per request)."""
    assert 'envint("DB_CONN_MAX_AGE", "0")' in SETTINGS.read_text()
    assert "DB_CONN_MAX_AGE" not in compose["services"]["web"]["environment"]
    assert compose["services"]["web"]["environment"]["DB_POOL_SIZE"] == "40"  # it pools them instead
    for service in ("worker", "sweeper", "beat"):
        assert compose["services"][service]["environment"]["DB_CONN_MAX_AGE"] == "60", service
    assert 'env("CELERY_SWEEP_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-sweep")' in SETTINGS.read_text()


def test_workers_scale_with_scale_worker_n(compose):
    worker = compose["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    assert "hostname" not in worker  # each replica keeps its own celery node name
    for name, service in compose["services"].items():
        assert "container_name" not in service, name


def test_workers_share_no_folder_and_reach_the_rooms_through_the_hubs_git_remote(compose):
    services = compose["services"]
    worker = services["worker"]
    assert worker["volumes"] == ["/data"]  # anonymous: one per container, shared with none
    assert worker["environment"]["ATRIUM_DATA_DIR"] == "/data"
    assert worker["environment"]["ATRIUM_HUB_URL"] == "${ATRIUM_HUB_URL:-http://web:8000}"
    assert "web" in services["web"]["environment"]["ALLOWED_HOSTS"].split(",")  # the workers' Host
    assert services["web"]["command"][-3:] == ["--port", "8000", "hub.asgi:application"]
    for name in ("web", "migrate", "sweeper", "beat"):  # the hub's folders: theirs alone
        assert services[name]["volumes"] == ["atrium-data:/data"], name
        assert services[name]["environment"]["ATRIUM_HUB_URL"] == "", name
    # What every container reads must not be a folder of one of them.
    assert worker["environment"]["ATRIUM_BLOB_STORE"] == "${ATRIUM_BLOB_STORE:-database}"
    assert "DATABASE_URL" in worker["environment"]


def test_hub_containers_get_every_variable_without_a_safe_default(compose):
    reads = settings_env_reads()
    required = {name for name, read in reads.items() if needs_a_value_in_production(read)}
    for service in HUB_SERVICES:
        environment = compose["services"][service]["environment"]
        missing = {
            name for name in required
            if name not in environment and not (reads[name]["secret"] and f"{name}_FILE" in environment)
        }
        assert missing == set(), f"{service} lacks {sorted(missing)}"


def test_production_secrets_have_no_default_and_debug_is_off(compose):
    for service in HUB_SERVICES:
        environment = compose["services"][service]["environment"]
        assert str(environment["DEBUG"]).lower() == "false", service
        # ${NAME:?message}: compose refuses to start without it, there is no fallback value.
        assert re.fullmatch(r"\$\{SECRET_KEY:\?[^}]+\}", environment["SECRET_KEY"]), service


def test_compose_names_no_variable_the_settings_do_not_read(compose):
    reads = settings_env_reads()
    known = set(reads) | {f"{name}_FILE" for name, read in reads.items() if read["secret"]}
    for service in HUB_SERVICES:
        unknown = set(compose["services"][service]["environment"]) - known
        assert unknown == set(), f"{service} sets {sorted(unknown)}, which hub/settings.py never reads"


def test_the_dockerfile_builds_on_python_312_slim_with_every_app_and_collected_static():
    dockerfile = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.12-slim\b", dockerfile, re.MULTILINE)
    for app in ("hub", "rooms", "agents", "observations"):
        assert re.search(rf"^COPY {app} \./{app}$", dockerfile, re.MULTILINE), app
    assert "collectstatic --noinput" in dockerfile
    assert re.search(r"^USER (?!root)\w+", dockerfile, re.MULTILINE)


def test_the_healthcheck_script_knows_every_mode_compose_uses(compose):
    script = (ROOT / "docker" / "healthcheck.py").read_text()
    modes = set(re.search(r"checks = \{(.*?)\}", script).group(1).replace('"', "").replace(" ", "").split(","))
    modes = {mode.split(":")[0] for mode in modes}
    for name in ("web", "worker", "beat"):
        test = compose["services"][name]["healthcheck"]["test"]
        assert test[:2] == ["CMD", "atrium-healthcheck"], name
        assert test[2] in modes, name


def dockerfile_env() -> dict[str, str]:
    """NAME=value pairs of the Dockerfile's ENV instructions (continuation lines joined)."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    values: dict[str, str] = {}
    for line in joined.splitlines():
        if match := re.match(r"^ENV\s+(.*)$", line.strip()):
            values.update(re.findall(r"(\w+)=(\S+)", match.group(1)))
    return values


def test_the_image_says_debug_off_in_so_many_words():
    """The image says DEBUG off in so many words, as every compose service does."""
    assert dockerfile_env()["DEBUG"].lower() == "false"
    assert dockerfile_env()["ATRIUM_DATA_DIR"] == "/data"  # the parser reads the block it should


def test_every_long_running_service_restarts_on_its_own(compose):
    """A crashed web, worker, beat, PostgreSQL or Redis container comes back by itself
    (the supervisor of `manage.py start` does the same on one machine)."""
    for name in LONG_RUNNING:
        assert compose["services"][name].get("restart") in ("unless-stopped", "always"), name


def test_the_image_has_the_sandbox_and_compose_lets_it_make_namespaces(compose):
    """bubblewrap in the image (with setpriv and prlimit from util-linux, part of the base
    image); the hub's containers may create namespaces (seccomp and AppArmor lifted), and
    nothing more: no privileged mode, no added capabilities, the unprivileged user kept."""
    dockerfile = DOCKERFILE.read_text()
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", dockerfile)
    assert re.search(r"^USER atrium$", dockerfile, re.MULTILINE)
    for name in HUB_SERVICES:
        service = compose["services"][name]
        assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(service.get("security_opt", [])), name
        assert not service.get("privileged") and not service.get("cap_add"), name


def test_redis_and_postgres_require_passwords_the_hub_is_given(compose):
    """Issue 24: the hub's services are not open to whoever reaches them."""
    redis = compose["services"]["redis"]
    assert "--requirepass" in redis["command"]
    password = redis["command"][redis["command"].index("--requirepass") + 1]
    assert password.startswith("${REDIS_PASSWORD:?")
    env = compose["x-atrium"]["environment"] if "x-atrium" in compose else compose["services"]["web"]["environment"]
    assert env["REDIS_URL"].startswith("redis://:${REDIS_PASSWORD:?") and "${POSTGRES_PASSWORD:?" in env["DATABASE_URL"]
    assert "${REDIS_PASSWORD:?" in " ".join(redis["healthcheck"]["test"])
