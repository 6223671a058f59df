"""ToolHub's own database: DATABASE_URL (PostgreSQL in production, SQLite embedded),
the connection pool per process and prepared statements (docs/operations.md
"Database connections")."""

from __future__ import annotations

import re

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from toolhub.env import env_float, env_int
from toolhub.settings.base import DATABASE_URL, VAR_DIR

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

# PostgreSQL: the fixed statements of the call path (the Execution row and its audit
# events, the generation read) are prepared on a connection after this many runs
# (toolhub/db/postgresql/base.py); 0 never prepares them, for a pooler in transaction
# mode that cannot keep prepared statements.
TOOLHUB_DB_PREPARE_THRESHOLD = env_int("TOOLHUB_DB_PREPARE_THRESHOLD", 1, minimum=0)
