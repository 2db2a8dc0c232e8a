"""Atrium settings: 12-factor, read from the environment.

Unset variables fall back to embedded defaults (SQLite under ATRIUM_DATA_DIR, by default
the user's data folder outside any checkout, and an embedded Redis the start command
launches), so a checkout runs with no services.

DEBUG is off unless asked for. On the embedded defaults (DATABASE_URL unset: one machine)
a missing SECRET_KEY is generated once and kept in the data folder, and the hub answers
localhost over plain http. With a DATABASE_URL (a deployment, perhaps of many machines,
which must all share one key) the process refuses to start without a SECRET_KEY.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from hub.env import celery_url, default_data_dir, env, envbool, envfloat, envint, envlist, envsecret
from hub.redis_options import channel_layer_host

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env("ATRIUM_DATA_DIR") or default_data_dir()).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", "False")
# One machine answering localhost: the embedded defaults, or a developer's DEBUG.
LOCAL = DEBUG or not env("DATABASE_URL")
SECRET_KEY = envsecret("SECRET_KEY", kept_in=DATA_DIR / "secret_key" if LOCAL else None)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost" if LOCAL else "")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_htmx",
    "axes",
    "hub",
    "rooms",
    "agents",
    "sessions",
    "endpoint",
    "evals",
    "remote",
    "observations",
]

MIDDLEWARE = [
    "hub.debug.LocalDebugPagesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "hub.security_headers.content_security_policy",
    "hub.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

# Login throttling (django-axes): after ATRIUM_LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out for ATRIUM_LOGIN_LOCKOUT_MINUTES
# (per pair, so one attacker cannot lock a person out from everywhere, nor lock out
# everyone behind one proxy). The admin's login is the same login.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("ATRIUM_LOGIN_FAILURE_LIMIT", "5")
AXES_COOLOFF_TIME = timedelta(minutes=envint("ATRIUM_LOGIN_LOCKOUT_MINUTES", "15"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

ROOT_URLCONF = "hub.urls"
# With DEBUG on, tracebacks only for requests from the hub's own machine (hub.debug).
DEFAULT_EXCEPTION_REPORTER = "hub.debug.LocalOnlyExceptionReporter"
ASGI_APPLICATION = "hub.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "hub" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "hub.context_processors.sandbox",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------
SQLITE_PATH = DATA_DIR / "atrium.sqlite3"
DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL") or f"sqlite:///{SQLITE_PATH}",
        # Connections are reused (Daphne's database thread, each worker): opening one
        # per request or websocket frame cost a fifth of the web process's time. A
        # health check before reuse replaces one the server closed.
        conn_max_age=envint("DB_CONN_MAX_AGE", "0"),
        conn_health_checks=True,
    )
}
# The web process draws its PostgreSQL connections from a pool of at most DB_POOL_SIZE
# (0: none): under ASGI a request and a websocket frame run in threads that come and go
# (a gateway request's are kept for the next, hub/gateway_handler.py), so a kept
# connection would leak, and opening one each time cost 3-5 ms of this process
# and a new server process. A full pool makes a request wait. Django checks a pooled
# connection before it hands it out (its own `check`: Django 5.2 refuses a second one).
DB_POOL_SIZE = envint("DB_POOL_SIZE", "0")
if DB_POOL_SIZE > 0 and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them; Django refuses both
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_SIZE), "max_size": DB_POOL_SIZE, "timeout": envint("DB_POOL_TIMEOUT", "30"),
    }
# PostgreSQL plans a statement each time it arrives with its values written into its
# text (Django's default, client-side binding): the gateway key's look-up, joins and
# EXISTS clauses over five tables, spent 4.4 ms planning and 0.1 ms running. With the
# values bound on the server, psycopg prepares a statement once a connection has run it
# DB_PREPARE_THRESHOLD times, and the server runs its plan again (the look-up then takes
# 3.8 ms instead of 9.9: docs/operations.md, the gateway's latency). 0 turns it off,
# for a pooler in front of PostgreSQL that cannot keep prepared statements (PgBouncer in
# transaction mode before 1.21).
DB_PREPARE_THRESHOLD = envint("DB_PREPARE_THRESHOLD", "5")
if DB_PREPARE_THRESHOLD > 0 and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=DB_PREPARE_THRESHOLD)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes; IMMEDIATE makes writers
    # queue on the lock instead of failing mid-transaction with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # Tests use a file too, so Celery worker subprocesses can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-atrium.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis, channels, celery ---------------------------------------------------------
# Embedded default: the start command runs a Redis on this socket (hub.embedded),
# so every process of the hub, and any `manage.py` command, finds the same one.
REDIS_URL = env("REDIS_URL") or f"unix://{DATA_DIR / 'redis.sock'}"

# How long one Redis read may take. It must stay well above the channel layer's 5 s
# blocking read (an idle websocket waits in it); /healthz says so if it does not.
REDIS_SOCKET_TIMEOUT = envfloat("REDIS_SOCKET_TIMEOUT", "30")
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "hub.channel_layer.AuthenticatedChannelLayer",
        "CONFIG": {
            "hosts": [channel_layer_host(REDIS_URL, read_timeout=REDIS_SOCKET_TIMEOUT,
                                         max_connections=envint("CHANNEL_LAYER_MAX_CONNECTIONS", "2000"))],
            "prefix": env("CHANNELS_PREFIX", "atrium"),
            # Frames are encrypted and authenticated with a key derived from SECRET_KEY:
            # whoever reaches Redis without it can neither read a room's events nor
            # forge one into a page.
            "symmetric_encryption_keys": [SECRET_KEY],
        },
    }
}

CELERY_BROKER_URL = celery_url(REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_QUEUE", "atrium")
# Remote control (pings, /healthz's inspect) in a namespace of this hub's own: workers of
# another hub on the same Redis neither answer it nor, once dead, leave bindings behind
# that its checks would wait for.
CELERY_CONTROL_EXCHANGE = f"{CELERY_TASK_DEFAULT_QUEUE}-control"
# A redelivered message must not wait an hour: unacked work comes back after this.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", "3600")}

# --- auth, i18n, static ----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "room_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# The Docker image collects static files at build time, outside the data volume.
STATIC_ROOT = Path(env("STATIC_ROOT", str(DATA_DIR / "static")))
# WhiteNoise warns on every request while the folder is missing (before collectstatic).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# WhiteNoise serves static files in every process shape; on one machine straight from the
# apps (no collectstatic needed), in production from STATIC_ROOT (the image collects).
WHITENOISE_USE_FINDERS = LOCAL
WHITENOISE_AUTOREFRESH = DEBUG

# Behind a TLS proxy (ATRIUM_TLS_PROXY=true) the proxy's X-Forwarded-Proto says the request
# was https, and HTTPS responses tell browsers to come back only over TLS (HSTS).
TLS_PROXY = envbool("ATRIUM_TLS_PROXY", "False")
if TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# A local hub answers plain http, where a Secure cookie would never come back.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = TLS_PROXY or not LOCAL
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "0" if LOCAL and not TLS_PROXY else str(365 * 24 * 3600))

# --- atrium ------------------------------------------------------------------------------
REPOS_DIR = DATA_DIR / "repos"
WORKTREES_DIR = DATA_DIR / "worktrees"
JOBS_DIR = DATA_DIR / "jobs"
BLOBS_DIR = DATA_DIR / "blobs"
# A worker that does not see the hub's folders: its own copies of the rooms'
# repositories, kept from the hub's git remote at ATRIUM_HUB_URL (sessions/worker/room_git.py).
HUB_URL = env("ATRIUM_HUB_URL", "").rstrip("/")
COPIES_DIR = DATA_DIR / "copies"
# Tool results larger than this go to the blob store instead of their rows: files under
# BLOBS_DIR ("files"), their rows all the same ("database"), or an S3-compatible store
# ("s3://<bucket>[/<prefix>]", at ATRIUM_S3_ENDPOINT_URL unless it is AWS's);
# observations/blob_store.py.
BLOB_INLINE_MAX = envint("ATRIUM_BLOB_INLINE_MAX", str(256 * 1024))
BLOB_STORE = env("ATRIUM_BLOB_STORE", "files")
S3_ENDPOINT_URL = env("ATRIUM_S3_ENDPOINT_URL", "")
if HUB_URL and (not env("DATABASE_URL").startswith(("postgres://", "postgresql://")) or BLOB_STORE == "files"):
    raise ImproperlyConfigured(
        "ATRIUM_HUB_URL (a worker that does not see the hub's folders) needs the hub's DATABASE_URL (PostgreSQL) and "
        "ATRIUM_BLOB_STORE=database or s3://…: an SQLite file or blob files would be this machine's alone."
    )
ATRIUM_MAX_MESSAGE_BYTES = envint("ATRIUM_MAX_MESSAGE_BYTES", str(32 * 1024))
# A worker running a session renews its lease with a heartbeat every
# ATRIUM_HEARTBEAT_SECONDS; a lease not renewed for ATRIUM_LEASE_SECONDS (a few missed
# heartbeats) means the worker died, and the next sweep hands the session to another.
ATRIUM_HEARTBEAT_SECONDS = envfloat("ATRIUM_HEARTBEAT_SECONDS", "2")
ATRIUM_LEASE_SECONDS = envfloat("ATRIUM_LEASE_SECONDS", "8")
if ATRIUM_LEASE_SECONDS < 2 * ATRIUM_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"ATRIUM_LEASE_SECONDS ({ATRIUM_LEASE_SECONDS:g}) must be at least twice ATRIUM_HEARTBEAT_SECONDS "
        f"({ATRIUM_HEARTBEAT_SECONDS:g}): one late heartbeat must not hand a live worker's session away."
    )
# A worker runs one session at most this long, then queues it again (fair turns).
ATRIUM_WORKER_SLICE_SECONDS = envint("ATRIUM_WORKER_SLICE_SECONDS", "120")
# A person waiting this long for a session no worker holds makes running slices yield
# at their next boundary (sessions/dispatch.py); an idle worker usually takes it first.
ATRIUM_ATTENTION_GRACE_SECONDS = envfloat("ATRIUM_ATTENTION_GRACE_SECONDS", "1")
ATRIUM_SHELL_YIELD_SECONDS = envfloat("ATRIUM_SHELL_YIELD_SECONDS", "45")
# A job with no output for this long is reported dead (and its processes killed).
ATRIUM_JOB_SILENCE_SECONDS = envfloat("ATRIUM_JOB_SILENCE_SECONDS", "900")
ATRIUM_APPROVAL_TIMEOUT_SECONDS = envint("ATRIUM_APPROVAL_TIMEOUT_SECONDS", "900")
ATRIUM_SESSION_TIME_LIMIT_SECONDS = envint("ATRIUM_SESSION_TIME_LIMIT_SECONDS", "3600")
# The gateway endpoint (endpoint/) serves each client conversation as a session
# of the room, its requests rewritten by the gateway; off, it only relays them upstream
# (pass-through: the answer byte for byte, streamed as it arrives, no session).
ATRIUM_GATEWAY_SESSIONS = envbool("ATRIUM_GATEWAY_SESSIONS", "True")
# Requests one gateway key may have in flight in one web process; more are a 429.
ATRIUM_GATEWAY_KEY_CONCURRENCY = envint("ATRIUM_GATEWAY_KEY_CONCURRENCY", "8")
# Gateway requests one web process has upstream at once (each holds a thread and, on
# PostgreSQL, a database connection while the model answers: keep it under DB_POOL_SIZE);
# also the most idle threads kept for gateway requests' own quick calls.
ATRIUM_GATEWAY_THREADS = envint("ATRIUM_GATEWAY_THREADS", "32")
# A check command (verify) that runs longer than this counts as failed.
ATRIUM_CHECK_TIMEOUT_SECONDS = envint("ATRIUM_CHECK_TIMEOUT_SECONDS", "600")
# How often beat looks for expired leases, due wake-ups, expired approvals, overruns.
ATRIUM_SWEEP_SECONDS = envfloat("ATRIUM_SWEEP_SECONDS", "3")
# A session's worktree is removed this many days after it ended (its branch stays); 0 keeps all.
ATRIUM_WORKTREE_KEEP_DAYS = envfloat("ATRIUM_WORKTREE_KEEP_DAYS", "7")
# `replay:<file>` models play files from this folder only.
REPLAYS_DIR = Path(env("ATRIUM_REPLAY_DIR", str(BASE_DIR / "agents" / "replays"))).resolve()
# `script:<name>` models (evals, evals/) play the scenarios `manage.py eval` stores here.
EVAL_SCRIPTS_DIR = DATA_DIR / "evals"
# A room may be copied from a local repository only inside these folders (none by default).
ATRIUM_CLONE_ROOTS = [Path(p).expanduser().resolve() for p in envlist("ATRIUM_CLONE_ROOTS")]
# A room may be linked to an upstream repository only on these hosts (none by default):
# `github.com` allows HTTPS there, `http://host:port` that exact plain-HTTP origin.
ATRIUM_UPSTREAM_HOSTS = envlist("ATRIUM_UPSTREAM_HOSTS")
# A git bundle uploaded to create a room may be at most this large.
ATRIUM_UPLOAD_MAX_BYTES = envint("ATRIUM_UPLOAD_MAX_BYTES", str(200 * 1024 * 1024))
# The files of any branch of an imported repository may add up to at most this much.
ATRIUM_CHECKOUT_MAX_BYTES = envint("ATRIUM_CHECKOUT_MAX_BYTES", str(1024 * 1024 * 1024))
ATRIUM_CHECKOUT_MAX_FILES = envint("ATRIUM_CHECKOUT_MAX_FILES", "500000")

# --- the sandbox every command of a room runs in (agents.tools.sandbox) -----------------
# "bwrap" (the default) confines agents' commands, jobs and room checks with bubblewrap,
# and refuses to run them where it cannot; "off" is the operator's explicit opt-out:
# commands then run unconfined, as the hub's user (pages and logs say so).
ATRIUM_SANDBOX = env("ATRIUM_SANDBOX", "bwrap").strip().lower()
if ATRIUM_SANDBOX not in {"bwrap", "off"}:
    raise ImproperlyConfigured(f"ATRIUM_SANDBOX must be bwrap or off, got {ATRIUM_SANDBOX!r}")
ATRIUM_SANDBOX_UID = envint("ATRIUM_SANDBOX_UID", "65534")  # used when the hub runs as root
ATRIUM_SANDBOX_GID = envint("ATRIUM_SANDBOX_GID", "65534")
# A hub that is root runs each room's commands as a user of the room's own: this base plus
# the room's id (0: every room as ATRIUM_SANDBOX_UID). Pick a range no account uses.
ATRIUM_ROOM_UID_BASE = envint("ATRIUM_ROOM_UID_BASE", "1500000000")
ATRIUM_SANDBOX_CPU_SECONDS = envint("ATRIUM_SANDBOX_CPU_SECONDS", "3600")
ATRIUM_SANDBOX_MEMORY_MB = envint("ATRIUM_SANDBOX_MEMORY_MB", "8192")
ATRIUM_SANDBOX_PROCESSES = envint("ATRIUM_SANDBOX_PROCESSES", "1024")
ATRIUM_SANDBOX_FILE_MB = envint("ATRIUM_SANDBOX_FILE_MB", "1024")
# Of a command's (or the room's check's) output, what is kept; the rest is read and dropped.
ATRIUM_COMMAND_OUTPUT_MB = envint("ATRIUM_COMMAND_OUTPUT_MB", "32")
# Disk a session's worktree may take: a command past it is stopped and the session ends.
ATRIUM_WORKTREE_MAX_MB = envint("ATRIUM_WORKTREE_MAX_MB", "4096")
# Below this much free space on the data folder's disk no new session starts (/healthz says so).
ATRIUM_MIN_FREE_MB = envint("ATRIUM_MIN_FREE_MB", "1024")
# A session that met a full disk is tried again this often, until its writes fit.
ATRIUM_DISK_RETRY_SECONDS = envint("ATRIUM_DISK_RETRY_SECONDS", "30")
# What all running commands of one room share (its control group, where the hub may make one).
ATRIUM_ROOM_PROCESSES = envint("ATRIUM_ROOM_PROCESSES", "512")
ATRIUM_ROOM_MEMORY_MB = envint("ATRIUM_ROOM_MEMORY_MB", "4096")
ATRIUM_ROOM_CPUS = envfloat("ATRIUM_ROOM_CPUS", "1.0")
# More folders commands may read (e.g. a toolchain in /opt), and variables they may see.
ATRIUM_SANDBOX_READ_ONLY = envlist("ATRIUM_SANDBOX_READ_ONLY")
ATRIUM_SANDBOX_PASS_ENV = envlist("ATRIUM_SANDBOX_PASS_ENV", "LANG,LC_ALL,TZ")
# Overrides of the context gateway's fold rules; unset keeps the tuned defaults of
# observations/gateway/budget.Budget (trigger_ratio, target_ratio, min_freed_tokens,
# max_postponements, segment_ratio, and the working-set guard's working_set_steps and
# optional_min_freed), e.g. ATRIUM_FOLD_MAX_POSTPONEMENTS=0.
ATRIUM_FOLD_OVERRIDES = {
    field: read(name, "")
    for field, name, read in (
        ("trigger_ratio", "ATRIUM_FOLD_TRIGGER_RATIO", envfloat),
        ("target_ratio", "ATRIUM_FOLD_TARGET_RATIO", envfloat),
        ("min_freed_tokens", "ATRIUM_FOLD_MIN_FREED_TOKENS", envint),
        ("max_postponements", "ATRIUM_FOLD_MAX_POSTPONEMENTS", envint),
        ("segment_ratio", "ATRIUM_SEGMENT_RATIO", envfloat),
        ("working_set_steps", "ATRIUM_FOLD_WORKING_SET_STEPS", envint),
        ("optional_min_freed", "ATRIUM_FOLD_OPTIONAL_MIN_FREED", envfloat),
    )
    if env(name)
}
# The live loop alarm (sessions/analysis/loops.py): the same content read N times, or the
# identical command failing N times, within a window of steps; or N steps with no write
# and no test. Each raises a badge, a loop.suspected event and one nudge to the agent.
ATRIUM_LOOP_RULES = {
    "rereads": envint("ATRIUM_LOOP_REREADS", "3"),
    "failing_runs": envint("ATRIUM_LOOP_FAILING_RUNS", "3"),
    "window": envint("ATRIUM_LOOP_WINDOW_STEPS", "10"),
    "stall_steps": envint("ATRIUM_LOOP_STALL_STEPS", "20"),
}
# Agents mentioning agents (sessions/runtime/mentions.py): at most `per_pair` posts from one
# agent reach another within `window_seconds`, and a session takes at most `per_session`
# agents' mentions; what the guard stops is posted to the room for people to see.
ATRIUM_AGENT_MENTIONS = {"per_pair": 3, "window_seconds": 600, "per_session": 10}
# Model calls: attempts on 429/5xx/timeouts, and the first backoff (doubling, jittered).
ATRIUM_PROVIDER_MAX_ATTEMPTS = envint("ATRIUM_PROVIDER_MAX_ATTEMPTS", "5")
ATRIUM_PROVIDER_RETRY_BASE_SECONDS = envfloat("ATRIUM_PROVIDER_RETRY_BASE_SECONDS", "1.0")
# Beat's sweep has its own queue and worker, so
# sessions filling every worker slot never delay it; a sweep not started within its
# period is dropped (the next one does its work).
CELERY_SWEEP_QUEUE = env("CELERY_SWEEP_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-sweep")
# The worktree pass runs git under rooms' locks: on a session worker, not on the sweeper,
# whose one process must keep looking every few seconds. While it waits in the run queue
# it counts as a turn there (dispatch.turns_missing), as stop_session_jobs does: the
# turn of a session claimable meanwhile is sent by the sweep after a worker took the pass.
CELERY_TASK_ROUTES = {"sessions.tasks.sweep_sessions": {"queue": CELERY_SWEEP_QUEUE}}
CELERY_BEAT_SCHEDULE = {
    "sweep-sessions": {"task": "sessions.tasks.sweep_sessions", "schedule": ATRIUM_SWEEP_SECONDS,
                       "options": {"expires": ATRIUM_SWEEP_SECONDS}},
    "remove-old-worktrees": {"task": "sessions.tasks.remove_old_worktrees", "schedule": 600.0,
                             "options": {"expires": 600.0}},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_without_traceback": {"()": "hub.log_filters.ClientErrorsWithoutTraceback"},
                "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["client_errors_without_traceback"]},
        "mail_admins": {"level": "ERROR", "filters": ["require_debug_false"],
                        "class": "django.utils.log.AdminEmailHandler"},
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    # Django's own console handler repeated in DEBUG what the root's prints: its records
    # reach the root's console only (once), and the admins' mail as Django sends it.
    "loggers": {"django": {"handlers": ["mail_admins"], "level": "INFO"}},
}
