"""A bounded number of PostgreSQL connections per process, and the answer when none can be had.

Every connection a web or worker process opens to ToolHub's database is borrowed
from its pool (psycopg's, Django's ``OPTIONS["pool"]``, put in place by
``configure_process`` at the process's start), whichever thread asks: Django's request threads, the MCP endpoint's worker threads, an
executor's own. A thread gives its connection back when its request, MCP step or task
ends (``CONN_MAX_AGE = 0``), and while it waits for something that is not the
database (``release``): an upstream's answer, a worker's result, a person's approval.
So the pool's ``max_size`` is the most connections the process ever holds; a thread
that finds none free waits up to ``TOOLHUB_DB_POOL_TIMEOUT`` for one.

A connection that cannot be had (the pool's wait ran out, PostgreSQL refused the
client, the server is down) is an ``OperationalError``: the caller is answered
``503 database_unavailable`` with ``Retry-After`` (``DatabaseUnavailable``), never a
500. Formulas and settings: docs/operations.md "Database connections".
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from toolhub.exceptions import ToolHubError

logger = logging.getLogger(__name__)
# Seconds a caller is asked to wait before trying again.
RETRY_AFTER_SECONDS = 5
DEFAULT_APPLICATION_NAME = "toolhub"
MESSAGE = (
    "The database cannot take this request right now (no connection could be had); "
    "try again in a few seconds."
)
# What a connection that could not be had, or was lost, raises (Django's wrappers of
# psycopg's errors, its pool's PoolTimeout included).
UNAVAILABLE_ERRORS = (OperationalError, InterfaceError)


class DatabaseUnavailable(ToolHubError):
    """No database connection could be had: try again shortly (503, ``Retry-After``)."""

    status_code = 503
    code = "database_unavailable"

    def __init__(self, message: str = MESSAGE):
        super().__init__(message)
        self.headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}


def is_unavailable(exc: BaseException) -> bool:
    return isinstance(exc, UNAVAILABLE_ERRORS)


def unavailable_from(exc: BaseException) -> DatabaseUnavailable:
    """The answer for ``exc`` (logged once, by class only: a message may name the server)."""
    logger.warning("database unavailable: %s", _described(exc))
    return DatabaseUnavailable()


def _described(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return exc.__class__.__name__ + (f" ({cause.__class__.__name__})" if cause else "")


def release() -> None:
    """Give this thread's connection back to the pool while it waits for something else.

    Inside a transaction the connection stays (its work is not done); without a pool
    (SQLite) there is nothing to give back. The next query borrows one again."""
    if connection.in_atomic_block or connection.connection is None:
        return
    if getattr(connection, "pool", None) is None:
        return
    connection.close()


_configured: set[str] = set()
_configuring = threading.Lock()


def configure_process(kind: str, pool_size: int | None = None) -> None:
    """Put this serving process's pool in place: ``pool_size`` connections at most
    (``TOOLHUB_DB_POOL``'s otherwise), named ``toolhub-<kind>`` (pg_stat_activity's
    ``application_name``, unless DATABASE_URL names one).

    Called by the web and worker processes before their first connection (the pool
    is built at the first): the web entry points call it on their first request or
    lifespan event, so importing them (a test, a script) changes nothing. Other
    processes (commands, scripts) keep Django's connection per thread. Once per process."""
    if kind in _configured:
        return
    with _configuring:
        if kind not in _configured:
            _configure(kind, pool_size)
            _configured.add(kind)


def _configure(kind: str, pool_size: int | None) -> None:
    database = settings.DATABASES["default"]
    options = database.setdefault("OPTIONS", {})
    if options.get("application_name") == DEFAULT_APPLICATION_NAME:
        options["application_name"] = f"{DEFAULT_APPLICATION_NAME}-{kind}"
    pool = getattr(settings, "TOOLHUB_DB_POOL", None)
    if pool is None:  # not PostgreSQL
        return
    size = pool_size or pool["max_size"]
    options["pool"] = {**pool, "max_size": size, "min_size": min(pool["min_size"], size)}
    database["CONN_MAX_AGE"] = 0  # the pool keeps them instead
    # The pool would check each connection it lends with an empty query; the backend
    # checks it with the registry generation read instead (a round trip the request
    # makes anyway: docs/decisions/0002-generation-health-check.md).
    database["CONN_HEALTH_CHECKS"] = False
