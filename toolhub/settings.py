"""ToolHub settings, read from the environment (see docs/operations.md "Configuration").

With nothing set, ToolHub runs embedded: SQLite under ``var/``, a local-memory
cache, Celery tasks run in-process, DEBUG on and a development secret
generated into ``var/``. Setting ``DATABASE_URL`` switches to the production
shape, where DEBUG defaults to off and secrets must be provided.

This stays one module although it is longer than the others: settings are read
top to bottom, later values derive from earlier ones (``IS_PRODUCTION``, the
broker, the queues), and one file is where Django, operators and
``toolhub.settings_test`` expect to find every setting. The parsing helpers live
in ``toolhub.env``; what is left here is declarations, not logic to split.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from toolhub import tracing
from toolhub.env import env_bool, env_egress_allow, env_float, env_int, env_list, env_map, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TOOLHUB_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DATABASE_URL = env_str("DATABASE_URL")
EMBEDDED = not DATABASE_URL
DEBUG = env_bool("DEBUG", default=EMBEDDED)


def _dev_secret(file_name: str, make) -> str:
    """A development-only secret persisted in var/ (never in the repository)."""
    path = VAR_DIR / file_name
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _dev_secret("dev-secret-key", lambda: secrets.token_urlsafe(50))

# Fernet keys for secrets at rest; the first encrypts, all decrypt (rotation).
TOOLHUB_ENCRYPTION_KEYS = env_list("TOOLHUB_ENCRYPTION_KEYS")
if not TOOLHUB_ENCRYPTION_KEYS:
    if not DEBUG:
        raise ImproperlyConfigured("TOOLHUB_ENCRYPTION_KEYS must be set when DEBUG is off.")
    TOOLHUB_ENCRYPTION_KEYS = [
        _dev_secret("dev-encryption-key", lambda: Fernet.generate_key().decode())
    ]
for _position, _key in enumerate(TOOLHUB_ENCRYPTION_KEYS, start=1):
    try:
        Fernet(_key)
    except (ValueError, TypeError):
        # Which entry, never its value (it is a secret, or a typo of one).
        raise ImproperlyConfigured(
            f"TOOLHUB_ENCRYPTION_KEYS: entry {_position} of {len(TOOLHUB_ENCRYPTION_KEYS)} is "
            "not a Fernet key (32 url-safe base64-encoded bytes, e.g. from "
            "Fernet.generate_key())."
        ) from None

# Signs the audit chain's head (manage.py audit_head) so it can be checked later.
TOOLHUB_AUDIT_SIGNING_KEY = env_str("TOOLHUB_AUDIT_SIGNING_KEY") or ""
if not TOOLHUB_AUDIT_SIGNING_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("TOOLHUB_AUDIT_SIGNING_KEY must be set when DEBUG is off.")
    TOOLHUB_AUDIT_SIGNING_KEY = _dev_secret(
        "dev-audit-signing-key", lambda: secrets.token_urlsafe(32)
    )
# A short key can be guessed, and with it every audit event forged: refused in
# production (each of a rotation's keys), named by position, never quoted.
AUDIT_SIGNING_KEY_MIN_LENGTH = 32
if not DEBUG:
    _signing_keys = [k.strip() for k in TOOLHUB_AUDIT_SIGNING_KEY.split(",") if k.strip()]
    for _position, _key in enumerate(_signing_keys, start=1):
        if len(_key) < AUDIT_SIGNING_KEY_MIN_LENGTH:
            raise ImproperlyConfigured(
                f"TOOLHUB_AUDIT_SIGNING_KEY: key {_position} of {len(_signing_keys)} is shorter "
                f"than {AUDIT_SIGNING_KEY_MIN_LENGTH} characters; generate one with "
                'python3 -c "import secrets; print(secrets.token_urlsafe(48))".'
            )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "guardian",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "toolhub",
    "registry",
    "executions",
]

MIDDLEWARE = [
    "toolhub.metrics.MetricsMiddleware",
    "toolhub.middleware.RequestIDMiddleware",
    "toolhub.middleware.UnreadBodyDrainMiddleware",
    "toolhub.middleware.RequestShapeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's and Swagger UI's static files under gunicorn (no CDN, no nginx needed).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A page whose view gets no database connection answers 503 (the API: its handler).
    "toolhub.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Admin messages live in the session. The default (cookie, then session) builds
# a cookie signer on every request, API calls included: 3 % of the web
# process's CPU under load (bench/README.md), for messages only the admin shows.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

ROOT_URLCONF = "toolhub.urls"
WSGI_APPLICATION = "toolhub.wsgi.application"
ASGI_APPLICATION = "toolhub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The database engines ToolHub runs on, by DATABASE_URL scheme (dj-database-url
# knows more, e.g. mysql://, which would fail later without naming the variable).
DATABASE_URL_SCHEMES = ("postgres", "postgresql", "pgsql", "sqlite")

# PostgreSQL connections per process (docs/operations.md "Database connections"): the
# web process's pool, each Celery worker process's, how long a thread waits for one.
TOOLHUB_DB_POOL_SIZE = env_int("TOOLHUB_DB_POOL_SIZE", 10, minimum=1)
TOOLHUB_WORKER_DB_POOL_SIZE = env_int("TOOLHUB_WORKER_DB_POOL_SIZE", 2, minimum=1)
TOOLHUB_DB_POOL_TIMEOUT = env_float("TOOLHUB_DB_POOL_TIMEOUT", 5.0, minimum=0.1)

if DATABASE_URL:
    _scheme = DATABASE_URL.split("://", 1)[0].lower() if "://" in DATABASE_URL else ""
    if _scheme not in DATABASE_URL_SCHEMES:
        # Never quote the URL: it may hold a password.
        raise ImproperlyConfigured(
            "DATABASE_URL "
            + (
                f"has the unsupported scheme {_scheme!r}"
                if re.fullmatch(r"[a-z][a-z0-9+.-]*", _scheme)
                else "has no valid scheme"
            )
            + "; accepted schemes: "
            + ", ".join(f"{s}://" for s in DATABASE_URL_SCHEMES)
            + " (e.g. postgres://user:pass@host:5432/toolhub or sqlite:////path/toolhub.sqlite3)"
        )
    try:
        DATABASES = {
            "default": dj_database_url.parse(
                DATABASE_URL, conn_max_age=600, conn_health_checks=True
            )
        }
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL cannot be parsed: {exc}") from exc
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's PostgreSQL backend whose per-request health check is the
        # registry generation read (one round trip fewer per API call).
        DATABASES["default"]["ENGINE"] = "toolhub.db.postgresql"
        # The web and worker processes borrow every connection from one pool per process
        # (psycopg's, Django's OPTIONS["pool"]), whichever thread asks (Django's, the MCP
        # endpoint's, an executor's), given back when the request, the MCP step or the
        # task ends, or while it waits: such a process never holds more than max_size
        # connections, whatever the load; a thread that finds none free waits up to
        # TOOLHUB_DB_POOL_TIMEOUT, then the call is answered 503 database_unavailable.
        # toolhub.asgi / toolhub.wsgi and the Celery worker put it in place
        # (toolhub.db.pool.configure_process); a command keeps a connection per thread.
        # Formulas: docs/operations.md "Database connections".
        TOOLHUB_DB_POOL = {
            "min_size": 1,
            "max_size": TOOLHUB_DB_POOL_SIZE,
            "timeout": TOOLHUB_DB_POOL_TIMEOUT,
            # Connections past min_size a burst opened close after this long unused.
            "max_idle": 60,
        }
        # Which kind of process a backend belongs to, in pg_stat_activity (toolhub.db.pool).
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("application_name", "toolhub")
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "toolhub.sqlite3",
            # runserver serves threads: a transaction takes the write lock when it
            # begins (waiting up to the timeout), instead of failing with "database
            # is locked" when a read inside it turns into a write. WAL lets reads
            # go on while one thread writes.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
# Every call to Redis and the broker (cache, rate limits, concurrency slots, wake-ups,
# publishing a task) gives up after these many seconds, to connect and then to get
# each answer: a Redis or broker that accepts connections but never answers costs a
# web thread a few seconds, never the thread (README "Production shape").
TOOLHUB_REDIS_CONNECT_TIMEOUT = env_float("TOOLHUB_REDIS_CONNECT_TIMEOUT", 3.0, minimum=0.1)
TOOLHUB_REDIS_TIMEOUT = env_float("TOOLHUB_REDIS_TIMEOUT", 3.0, minimum=0.1)
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "toolhub",
            "OPTIONS": {
                "socket_connect_timeout": TOOLHUB_REDIS_CONNECT_TIMEOUT,
                "socket_timeout": TOOLHUB_REDIS_TIMEOUT,
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
GUARDIAN_RAISE_403 = False
ANONYMOUS_USER_NAME = None  # no guardian anonymous user: anonymous callers get nothing

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The admin's dates and times to the second, with the zone (toolhub/formats/en/formats.py).
FORMAT_MODULE_PATH = ["toolhub.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")

# Request bodies above this size are refused with 413 before parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("TOOLHUB_MAX_REQUEST_BYTES", 2 * 1024 * 1024, minimum=1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "registry.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["toolhub.api.renderers.EncodableJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["toolhub.api.parsers.LimitedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "toolhub.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "toolhub.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # ?format= selects an LLM provider's tool format (registry/me), not a renderer.
    "URL_FORMAT_OVERRIDE": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "ToolHub API",
    "DESCRIPTION": "Register, govern and audit the tools AI agents call.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc assets are served from the sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ToolTypeEnum": "registry.models.tools.ToolType",
        "JSONTypeEnum": "registry.models.tools.JSONType",
        "ParameterKindEnum": "registry.models.tools.ParameterKind",
        "ActionEnum": "registry.models.access.Action",
        "GuardActionEnum": "registry.models.guards.GuardAction",
        "GuardStageEnum": "registry.models.guards.GuardStage",
        "GuardKindEnum": "registry.models.guards.GuardKind",
    },
    # The error body as a component, and the errors every operation can answer.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "toolhub.api.openapi.document_errors",
        "toolhub.api.openapi.document_parameters",
        "toolhub.api.openapi_bodies.document_request_bodies",
    ],
}

# Celery: with no broker configured, tasks run in-process (embedded default).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "default"
# One queue per executor kind (http, database, mcp, python, command) so each scales on
# its own workers ("command" on hardened hosts: docs/operations.md); "default" carries
# the periodic housekeeping tasks.
CELERY_TASK_QUEUES = [
    Queue(name) for name in ("default", "http", "database", "mcp", "python", "command")
]
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A task whose worker died unacknowledged is redelivered after this long; the
    # reaper has usually ended or re-queued its execution well before.
    "visibility_timeout": env_int("TOOLHUB_BROKER_VISIBILITY_TIMEOUT", 3600, minimum=60),
    # Without these a publish to a broker that never answers waits forever.
    "socket_connect_timeout": TOOLHUB_REDIS_CONNECT_TIMEOUT,
    "socket_timeout": TOOLHUB_REDIS_TIMEOUT,
}
# Also how long, in all, a publish may spend (re)connecting before it fails.
CELERY_BROKER_CONNECTION_TIMEOUT = TOOLHUB_REDIS_CONNECT_TIMEOUT
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A publish that fails is tried once more at once, then the call is refused
# (executions.services.dispatch.dispatch_admitted): a caller is not held for long.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
# For a Redis result backend, should one be configured (none by default).
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = TOOLHUB_REDIS_CONNECT_TIMEOUT
CELERY_REDIS_SOCKET_TIMEOUT = TOOLHUB_REDIS_TIMEOUT
# Beat's own state file lives in var/ (writable by the service user), not in the
# working directory (the image's /app is read-only to it).
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "reap-executions": {
        "task": "executions.reap",
        "schedule": env_int("TOOLHUB_REAPER_INTERVAL", 30, minimum=5),
    },
    "seal-audit-log": {
        "task": "registry.seal_audit",
        "schedule": float(env_int("TOOLHUB_AUDIT_SEAL_INTERVAL", 2, minimum=1)),
    },
    "expire-approvals": {
        "task": "executions.expire_approvals",
        "schedule": env_int("TOOLHUB_APPROVAL_EXPIRY_INTERVAL", 60, minimum=5),
    },
    # Each MCP server has its own interval (sync_interval_minutes); this says how often
    # beat looks for servers that are due.
    "resync-mcp-servers": {
        "task": "executions.resync_mcp_servers",
        "schedule": env_int("TOOLHUB_MCP_RESYNC_CHECK_INTERVAL", 60, minimum=10),
    },
}

# Largest upstream response kept (as an artifact) for one execution; the row keeps
# at most the tool's max_response_bytes of it.
TOOLHUB_MAX_ARTIFACT_BYTES = env_int("TOOLHUB_MAX_ARTIFACT_BYTES", 64 * 1024 * 1024, minimum=1024)

# Executor kinds whose calls run in the web process when the caller waits ("wait": true):
# admitted and started in one durable write, then run here instead of taking the broker
# hop (bench/README.md measures both). Default "http": an HTTP call is I/O the web thread
# would otherwise spend blocked on the worker's answer; database, MCP and Python tools
# keep their connections, sessions and code on workers. Calls that do not wait always go
# to workers. "true" = all kinds; "false" or "none" = none.
EXECUTOR_KINDS = frozenset({"http", "database", "mcp", "python", "command"})


def inline_wait_kinds(items: list[str]) -> frozenset[str]:
    """TOOLHUB_INLINE_WAIT's items as a set of executor kinds (``true``/``all``, ``false``/``none``)."""
    kinds = [item.strip().lower() for item in items if item.strip()]
    if kinds in (["true"], ["all"]):
        return EXECUTOR_KINDS
    if kinds in (["false"], ["none"]):
        return frozenset()
    unknown = sorted(set(kinds) - EXECUTOR_KINDS)
    if unknown:
        raise ImproperlyConfigured(
            f"TOOLHUB_INLINE_WAIT: unknown executor kind(s) {unknown}; "
            f"use true, false or a comma-separated list of {sorted(EXECUTOR_KINDS)}."
        )
    return frozenset(kinds)


TOOLHUB_INLINE_WAIT = inline_wait_kinds(env_list("TOOLHUB_INLINE_WAIT", ["http"]))

# ASGI (toolhub/asgi.py): Django's threads per process (gthread's --threads under WSGI).
TOOLHUB_ASGI_DJANGO_THREADS = env_int("TOOLHUB_ASGI_DJANGO_THREADS", 4, minimum=1)
# ASGI (toolhub/asgi.py): paths served by an app other than Django's, named by dotted
# path (the project package imports no app, as ROOT_URLCONF includes urls by string).
TOOLHUB_ASGI_MOUNTS = {
    "/mcp": "executions.mcp_server.gate.application",
    "/.well-known/oauth-protected-resource": "executions.mcp_server.gate.application",
}
# The MCP endpoint (docs/mcp-server.md). Browser origins (scheme://host[:port], compared
# whole) it answers besides its own (DNS rebinding: a page elsewhere, or on another port
# of the same host, must not reach a local ToolHub).
TOOLHUB_MCP_ALLOWED_ORIGINS = env_list("TOOLHUB_MCP_ALLOWED_ORIGINS", [])
TOOLHUB_MCP_MAX_BODY_BYTES = env_int(
    "TOOLHUB_MCP_MAX_BODY_BYTES", DATA_UPLOAD_MAX_MEMORY_SIZE, minimum=1024
)
# A client that has not sent its whole request body in this many seconds gets a 408.
TOOLHUB_MCP_BODY_TIMEOUT = env_float("TOOLHUB_MCP_BODY_TIMEOUT", 10.0, minimum=0.1)
TOOLHUB_MCP_PAGE_SIZE = env_int("TOOLHUB_MCP_PAGE_SIZE", 100, minimum=1)
# Threads per web process for the MCP endpoint's database work and the calls it waits
# for (each may hold a database connection: mind PostgreSQL's max_connections).
TOOLHUB_MCP_THREADS = env_int("TOOLHUB_MCP_THREADS", 16, minimum=1)
# How long one tools/call waits for a human's approval before it answers with the
# execution to poll (2025 revisions), or asks the client to retry (2026-07-28).
TOOLHUB_MCP_APPROVAL_WAIT = env_float("TOOLHUB_MCP_APPROVAL_WAIT", 300.0, minimum=0.0)
TOOLHUB_MCP_APPROVAL_ROUND = env_float("TOOLHUB_MCP_APPROVAL_ROUND", 20.0, minimum=0.1)
# 2025 revisions' Mcp-Session-Id: kept in the shared cache (Redis), idle for at most this.
TOOLHUB_MCP_SESSION_TTL = env_int("TOOLHUB_MCP_SESSION_TTL", 24 * 3600, minimum=60)
# Sessions one token may hold: opening one more forgets the token's least recently
# used session (its client gets 404 and initializes again, as after an expiry).
TOOLHUB_MCP_SESSIONS_PER_TOKEN = env_int("TOOLHUB_MCP_SESSIONS_PER_TOKEN", 20, minimum=1)
# Listen streams (the 2025 GET stream, 2026-07-28 subscriptions/listen) open at once:
# per token across every web process (leases in Redis that expire when not renewed,
# so a process that dies frees its streams' places) and per web process (429 past either).
TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN = env_int(
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN", 10, minimum=1
)
TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS = env_int(
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS", 200, minimum=1
)
TOOLHUB_MCP_LISTEN_LEASE_SECONDS = env_int("TOOLHUB_MCP_LISTEN_LEASE_SECONDS", 30, minimum=3)
# A 2026-07-28 requestState (a call waiting for approval) is good for this many seconds
# after the answer that gave it, for the same caller, tool, arguments and path only.
TOOLHUB_MCP_REQUEST_STATE_TTL = env_int("TOOLHUB_MCP_REQUEST_STATE_TTL", 600, minimum=5)

# Registry reads of the execution path (token, roles, tool, rights, rules) are kept in
# memory per process and dropped whenever the registry generation changes
# (registry/snapshot.py). Off: every call reads the database.
TOOLHUB_REGISTRY_CACHE = env_bool("TOOLHUB_REGISTRY_CACHE", default=True)

# PostgreSQL: the fixed statements of the call path (the Execution row and its audit
# events, the generation read) are prepared on a connection after this many runs
# (toolhub/db/postgresql/base.py); 0 never prepares them, for a pooler in transaction
# mode that cannot keep prepared statements.
TOOLHUB_DB_PREPARE_THRESHOLD = env_int("TOOLHUB_DB_PREPARE_THRESHOLD", 1, minimum=0)

# How long an admitted call may wait in the queue for a concurrency slot.
TOOLHUB_QUEUE_WAIT_SECONDS = env_int("TOOLHUB_QUEUE_WAIT_SECONDS", 300, minimum=1)

# Egress guard: executors refuse private, loopback, link-local and metadata
# addresses unless listed here (CIDR networks and exact host names).
TOOLHUB_EGRESS_ALLOW = env_egress_allow("TOOLHUB_EGRESS_ALLOW")
# The demo only (./scripts/demo sets it): serve fake copies of the APIs the demo
# catalog calls at /demo-sandbox/ (toolhub/demo_sandbox.py), so the demo works
# offline. Never in production: refused with DEBUG off.
TOOLHUB_DEMO_SANDBOX = env_bool("TOOLHUB_DEMO_SANDBOX", default=False)
if TOOLHUB_DEMO_SANDBOX and not DEBUG:
    raise ImproperlyConfigured(
        "TOOLHUB_DEMO_SANDBOX serves fake upstream APIs for ./scripts/demo; "
        "it is refused when DEBUG is off."
    )
# Executables an MCP server over stdio may run (registering one runs it on the workers).
TOOLHUB_MCP_STDIO_COMMANDS = env_list("TOOLHUB_MCP_STDIO_COMMANDS")
# Environment variables an MCP server's token_env_var may name (names or fnmatch
# patterns). ToolHub's own settings are never allowed, whatever this says.
TOOLHUB_MCP_TOKEN_ENV_VARS = env_list("TOOLHUB_MCP_TOKEN_ENV_VARS", ["*_MCP_TOKEN"])
# Variables a stdio MCP server's env may set (names or fnmatch patterns, compared
# upper-cased); the default admits the credentials and endpoints MCP servers are
# configured with. Loader, interpreter, package-manager, TLS, proxy and home
# variables are refused whatever this says (registry.models.mcp).
DEFAULT_STDIO_ENV_VARS = [
    "*_TOKEN",
    "*_API_KEY",
    "*_APIKEY",
    "*_KEY",
    "*_SECRET",
    "*_PASSWORD",
    "*_PAT",
    "*_ID",
    "*_USER",
    "*_USERNAME",
    "*_URL",
    "*_HOST",
    "*_ENDPOINT",
    "*_REGION",
    "*_ORG",
    "*_PROJECT",
    "*_WORKSPACE",
    "*_TEAM",
    "*_DOMAIN",
    "LOG_LEVEL",
    "*_LOG_LEVEL",
]
TOOLHUB_MCP_STDIO_ENV_VARS = env_list("TOOLHUB_MCP_STDIO_ENV_VARS", DEFAULT_STDIO_ENV_VARS)
# Command tools (docs/tool-types.md "Command tools"): the executables they may run,
# as absolute paths (argv[0] must be one of them, checked when saved and at every run).
TOOLHUB_COMMAND_ALLOWLIST = env_list("TOOLHUB_COMMAND_ALLOWLIST")
for _executable in TOOLHUB_COMMAND_ALLOWLIST:
    if not _executable.startswith("/") or "\x00" in _executable:
        raise ImproperlyConfigured(
            f"TOOLHUB_COMMAND_ALLOWLIST: {_executable[:80]!r} is not an absolute path "
            "(list executables as /usr/bin/jq,/usr/bin/python3)"
        )
# Variables a command tool's env may set (names or fnmatch patterns, compared
# upper-cased); the loader, interpreter, PATH, HOME and proxy variables are refused
# whatever this says (registry.models.mcp.stdio_env.REFUSED_ENV_NAMES).
TOOLHUB_COMMAND_ENV_VARS = env_list(
    "TOOLHUB_COMMAND_ENV_VARS", [*DEFAULT_STDIO_ENV_VARS, "LANG", "LC_*", "TZ"]
)
# The sandbox program (bubblewrap); command tools refuse to run where it is missing.
TOOLHUB_BWRAP = env_str("TOOLHUB_BWRAP") or "/usr/bin/bwrap"
# Size of each command call's fresh workspace and /tmp (tmpfs, in memory), in MB.
TOOLHUB_COMMAND_WORKSPACE_MB = env_int("TOOLHUB_COMMAND_WORKSPACE_MB", 64, minimum=1)
# Named database connections for database tools: TOOLHUB_DATABASE_ALIASES="name=url,name2=url2".
TOOLHUB_DATABASE_ALIASES = env_map("TOOLHUB_DATABASE_ALIASES")
for _alias, _url in TOOLHUB_DATABASE_ALIASES.items():
    if _url.split("://", 1)[0].lower() not in ("postgresql", "postgres", "sqlite"):
        # Never quote the connection string: it may hold a password.
        raise ImproperlyConfigured(
            f"TOOLHUB_DATABASE_ALIASES: the connection of {_alias!r} is not a "
            "postgresql://…, postgres://… or sqlite:///… URL "
            '(expected TOOLHUB_DATABASE_ALIASES="name=url,name2=url2")'
        )
# The longest an API token may live, in days (unset: no limit). Tokens issued
# without an expiry get this one; a later expiry is refused.
TOOLHUB_TOKEN_MAX_DAYS = env_int("TOOLHUB_TOKEN_MAX_DAYS", 0, minimum=0) or None
# How long a token issued without an expiry lives (create_agent, the API, the admin); 0: until revoked.
TOOLHUB_TOKEN_DEFAULT_DAYS = env_int("TOOLHUB_TOKEN_DEFAULT_DAYS", 90, minimum=0)
# Modules whose @tool-decorated functions become Python tools (imported by every
# process at start; then manage.py sync_python_tools registers them). Code comes
# from here, the operator's environment, never from the database.
TOOLHUB_PYTHON_TOOL_MODULES = env_list("TOOLHUB_PYTHON_TOOL_MODULES")
# Modules whose @guard-decorated functions become guard functions a guard of kind
# "python" may name (imported by every process at start, like the tool modules).
TOOLHUB_GUARD_MODULES = env_list("TOOLHUB_GUARD_MODULES")
# The time the guards of one stage of one call may take together, in seconds: when it
# is spent the guard running fails closed (arguments refused, output withheld).
TOOLHUB_GUARD_BUDGET_SECONDS = env_float("TOOLHUB_GUARD_BUDGET_SECONDS", 5.0, minimum=0.001)
# Database tools' own connection strings may not log in as a PostgreSQL superuser
# (or a role that reads server files or runs programs); true lifts that.
TOOLHUB_DATABASE_ALLOW_SUPERUSER = env_bool("TOOLHUB_DATABASE_ALLOW_SUPERUSER", False)
# Directories whose SQLite files a database tool's own connection_string may open
# (aliases above are the operator's and are not limited). ToolHub's database never.
TOOLHUB_SQLITE_DIRS = env_list("TOOLHUB_SQLITE_DIRS")

# Most tools and MCP servers one import through the API or the admin may bring
# (each is written through the services with its audit events, ~20 ms apiece);
# the import_tools / import_openapi commands have no limit.
TOOLHUB_IMPORT_MAX_TOOLS = env_int("TOOLHUB_IMPORT_MAX_TOOLS", 500, minimum=1)

# Secure defaults once DEBUG is off. TLS terminates at the reverse proxy, which
# sets X-Forwarded-Proto; HSTS and the redirect can be tuned per deployment.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
# HSTS preload is a hard-to-undo commitment for the operator's whole domain, so
# it stays opt-in (SECURE_HSTS_PRELOAD=true) and its deploy warning is silenced.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# /healthz and /readyz are probed over plain HTTP inside the cluster.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Bearer token a Prometheus scraper presents at /metrics (empty: only reviewer/admin sessions).
TOOLHUB_METRICS_TOKEN = env_str("TOOLHUB_METRICS_TOKEN") or ""

# With traces on (OTEL_* set, toolhub/tracing.py), each line also names its trace
# (``trace_id`` on every record either way), so a line leads to its trace and back.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
if tracing.configured():
    LOG_FORMAT = (
        "%(asctime)s %(levelname)s %(name)s [%(request_id)s trace=%(trace_id)s] %(message)s"
    )
    # Celery's worker logs through its own handlers (toolhub.celery adds the filter).
    CELERY_WORKER_LOG_FORMAT = (
        "[%(asctime)s: %(levelname)s/%(processName)s trace=%(trace_id)s] %(message)s"
    )
    CELERY_WORKER_TASK_LOG_FORMAT = (
        "[%(asctime)s: %(levelname)s/%(processName)s trace=%(trace_id)s] "
        "%(task_name)s[%(task_id)s]: %(message)s"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "toolhub.middleware.RequestIDLogFilter"},
        "trace": {"()": "toolhub.tracing.TraceLogFilter"},
    },
    "formatters": {"plain": {"format": LOG_FORMAT}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id", "trace"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # The MCP SDK logs every stateless request's end at INFO ("Terminating session").
        "mcp.server.streamable_http": {"level": "WARNING"},
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
        # httpcore (the HTTP executor's transport) traces each exchange at DEBUG with the
        # upstream's headers, which may echo a credential: never below WARNING.
        "httpcore": {"level": "WARNING"},
    },
}
