"""Redis and Celery: the cache, the broker, the queues and the periodic tasks.

With no Redis the cache is local memory; with no broker Celery runs tasks in-process
(the embedded default)."""

from __future__ import annotations

from kombu import Queue

from toolhub.env import env_bool, env_float, env_int, env_str
from toolhub.settings.base import VAR_DIR

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
    "clear-expired-oauth-tokens": {
        "task": "registry.clear_expired_oauth_tokens",
        "schedule": env_int("TOOLHUB_OAUTH_CLEAR_INTERVAL", 3600, minimum=60),
    },
    # Each MCP server has its own interval (sync_interval_minutes); this says how often
    # beat looks for servers that are due.
    "resync-mcp-servers": {
        "task": "executions.resync_mcp_servers",
        "schedule": env_int("TOOLHUB_MCP_RESYNC_CHECK_INTERVAL", 60, minimum=10),
    },
}
# The periodic tasks above that run every few seconds and say nothing new: Celery's
# routine INFO lines about them are dropped (toolhub/celery.py) and they start no trace
# (toolhub/tracing.py). Their services log when they do something.
TOOLHUB_HOUSEKEEPING_TASKS = (
    "registry.seal_audit",
    "executions.reap",
    "executions.expire_approvals",
)
