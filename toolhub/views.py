"""Process probes and JSON error pages for the API."""

from __future__ import annotations

import logging
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import wraps

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found, server_error

from toolhub.api.exceptions import error_body
from toolhub.db import pool
from toolhub.middleware import database_unavailable

logger = logging.getLogger(__name__)


def _probe(view):
    """A probe answers GET and HEAD; other methods get a JSON 405, not a CSRF page."""

    @csrf_exempt
    @wraps(view)
    def wrapped(request):
        if request.method not in ("GET", "HEAD"):
            response = JsonResponse(
                error_body("method_not_allowed", f"Method {request.method!r} not allowed."),
                status=405,
            )
            response["Allow"] = "GET, HEAD"
            return response
        return view(request)

    return wrapped


def home(request):
    """The site's root: people go to the admin (agents use /api/v1)."""
    return redirect("admin:index")


@cache_control(max_age=86400, public=True)
def favicon(request):
    """Browsers ask every page for /favicon.ico: answer with ToolHub's icon, not a 404."""
    return redirect(static("toolhub/icon.svg"))


@_probe
def healthz(request):
    """The process is up and serving requests."""
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        logger.warning("readiness: database unreachable: %s", exc.__class__.__name__)
        return f"unreachable ({exc.__class__.__name__})"
    return None


def _check_broker() -> str | None:
    from toolhub.celery import app

    try:
        with app.connection_for_write() as conn:
            # One attempt: connecting (with its health check) is bounded by the broker
            # timeouts in settings; /readyz's budget bounds the whole check anyway.
            conn.ensure_connection(max_retries=0, timeout=READY_BUDGET_SECONDS)
    except Exception as exc:
        logger.warning("readiness: broker unreachable: %s", exc.__class__.__name__)
        return f"unreachable ({exc.__class__.__name__})"
    return None


def _check_cache() -> str | None:
    """Redis as the cache, rate-limit and concurrency store sees it: one read."""
    from django.core.cache import cache

    try:
        cache.get("toolhub:readyz")
    except Exception as exc:
        logger.warning("readiness: Redis unreachable: %s", exc.__class__.__name__)
        return f"unreachable ({exc.__class__.__name__})"
    return None


# /readyz answers within this many seconds whatever its dependencies do: the
# Redis and broker checks run beside the database check and any still going
# then is reported as not answering (settings bound how long it keeps going).
READY_BUDGET_SECONDS = 4.0
_ready_checks = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readyz")


# What checks the command sandbox: set by executions at start-up (toolhub imports no app).
_sandbox_check = None


def sandbox_check_register(check) -> None:
    global _sandbox_check
    _sandbox_check = check


def _command_sandbox() -> tuple[str, bool]:
    """The command sandbox's state, and whether its absence makes this process unready.

    Reported when command tools are enabled (``TOOLHUB_COMMAND_ALLOWLIST``). It counts
    for readiness where command calls run in this process (tasks in-process, or
    ``command`` in ``TOOLHUB_INLINE_WAIT``); elsewhere they run on the workers of the
    ``command`` queue, which refuse them on a host that lacks it.
    """
    if not settings.TOOLHUB_COMMAND_ALLOWLIST:
        return "not configured (TOOLHUB_COMMAND_ALLOWLIST is empty)", False
    problem = _sandbox_check() if _sandbox_check is not None else "no sandbox check registered"
    if problem is None:
        return "ok", False
    here = settings.CELERY_TASK_ALWAYS_EAGER or "command" in settings.TOOLHUB_INLINE_WAIT
    if here:
        return f"unavailable: {problem}", True
    return (
        f"unavailable on this host: {problem} (command calls run on the workers of the "
        "'command' queue, which refuse them on a host without it)",
        False,
    )


def _remote_checks() -> dict:
    """The checks of the services besides the database that are configured."""
    checks = {}
    if settings.CELERY_BROKER_URL and not settings.CELERY_TASK_ALWAYS_EAGER:
        checks["broker"] = _check_broker
    if settings.REDIS_URL:
        checks["cache"] = _check_cache
    return checks


@_probe
def readyz(request):
    """The database, Redis and the broker (those configured) answer, and command tools can
    be sandboxed where they run here: ready for traffic."""
    deadline = time.monotonic() + READY_BUDGET_SECONDS
    running = {name: _ready_checks.submit(check) for name, check in _remote_checks().items()}
    checks = {"database": _check_database()}
    for name, future in running.items():
        try:
            checks[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            future.cancel()  # not started yet (every checker busy): never start it
            logger.warning("readiness: %s gave no answer in time", name)
            checks[name] = f"no answer within {READY_BUDGET_SECONDS:g} s"
    report = {name: problem or "ok" for name, problem in checks.items()}
    if "broker" not in running:
        report["broker"] = "not configured (tasks run in-process)"
    if "cache" not in running:
        report["cache"] = "not configured (local memory)"
    report["command_sandbox"], sandbox_missing = _command_sandbox()
    ready = not any(checks.values()) and not sandbox_missing
    return JsonResponse(
        {"status": "ready" if ready else "unavailable", "checks": report},
        status=200 if ready else 503,
    )


def handler404(request, exception=None):
    if request.path.startswith("/api/"):
        return api_not_found(request)
    return page_not_found(request, exception)


_UUID_SEGMENT = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")


@csrf_exempt
def api_not_found(request, rest: str = ""):
    """No API endpoint has this path: the JSON error shape, with the likely slip named.

    The last URL pattern under ``/api/``, so a wrong path answers the same way with
    DEBUG on (the demo) as off, never with an HTML page.
    """
    path = request.path
    hint = ""
    if path.endswith("/") and path != "/api/v1/":
        hint = f" API paths have no trailing slash: {path.rstrip('/')}."
    elif any(
        segment and not segment.isdigit() and not _UUID_SEGMENT.match(segment)
        for segment in _id_positions(path)
    ):
        hint = " Ids in API paths are UUIDs (roles and tokens: numbers)."
    message = f"No API endpoint at {path}.{hint} The endpoints are listed at /api/schema/."
    return JsonResponse(error_body("not_found", message), status=404)


def _id_positions(path: str) -> list[str]:
    """Segments where an id would sit: after a collection name, e.g. /tools/<id>/configs."""
    collections = {
        "tools",
        "agents",
        "roles",
        "permissions",
        "executions",
        "approvals",
        "tokens",
        "mcp-servers",
        "rate-limits",
        "parameters",
    }
    parts = path.strip("/").split("/")
    return [parts[i + 1] for i, part in enumerate(parts[:-1]) if part in collections]


def handler500(request):
    raised = sys.exc_info()[1]
    if raised is not None and pool.is_unavailable(raised):
        return database_unavailable(request, raised)
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return server_error(request)
