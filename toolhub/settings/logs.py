"""Logs: one line format for every process, naming the request and, with traces on
(OTEL_* set, toolhub/tracing.py), the trace; the loggers kept quiet and why."""

from __future__ import annotations

from toolhub import tracing
from toolhub.env import env_str

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
        "secrets": {"()": "toolhub.log_secrets.SecretsLogFilter"},
    },
    "formatters": {"plain": {"format": LOG_FORMAT}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id", "trace", "secrets"],
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
