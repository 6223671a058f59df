"""Process probes and JSON error pages for the API."""

from __future__ import annotations

import logging
import re
from functools import wraps

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found, server_error

from toolhub.api.exceptions import error_body

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
    url = settings.CELERY_BROKER_URL
    if not url or settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    from toolhub.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        logger.warning("readiness: broker unreachable: %s", exc.__class__.__name__)
        return f"unreachable ({exc.__class__.__name__})"
    return None


@_probe
def readyz(request):
    """The database (and, when configured, the broker) answer: ready for traffic."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    report = {name: problem or "ok" for name, problem in checks.items()}
    if not settings.CELERY_BROKER_URL or settings.CELERY_TASK_ALWAYS_EAGER:
        report["broker"] = "not configured (tasks run in-process)"
    ready = not any(checks.values())
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
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return server_error(request)
