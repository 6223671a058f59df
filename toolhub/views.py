"""Process probes and JSON error pages for the API."""

from __future__ import annotations

import logging
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
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return page_not_found(request, exception)


def handler500(request):
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return server_error(request)
