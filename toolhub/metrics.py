"""Prometheus metrics: HTTP requests, executions, and a few database gauges, at ``/metrics``.

What is exported
- ``toolhub_http_requests_total{method,route,status}`` and
  ``toolhub_http_request_duration_seconds{method,route}``, from
  ``MetricsMiddleware``. ``route`` is the URL pattern's name (``execution-list``,
  ``admin:index``) or ``unmatched``, never the raw path; ``status`` is the class
  (``2xx``); unknown methods count as ``other``. All labels are bounded by code.
- ``toolhub_executions_total{tool_type,status}``,
  ``toolhub_execution_duration_seconds{tool_type,status}`` and
  ``toolhub_execution_refusals_total{reason}``, from ``record_execution``
  (called when an execution reaches a terminal status). The tool *name* is not
  a label on purpose: imported MCP servers can register thousands of tools and
  each name would multiply every series; per-tool numbers are in
  ``/api/v1/stats`` and the admin dashboard.
- At scrape time, from the database (indexed, constant-size queries):
  ``toolhub_executions_last_hour{status}``, ``toolhub_executions_in_flight{status}``,
  ``toolhub_approvals_pending`` and ``toolhub_metrics_database_up``. These are
  true across every process (web and workers alike).

Processes
- Plain mode (default): one registry per process. Under gunicorn with several
  workers each scrape then sees one worker's counters only.
- Multiprocess mode: set ``PROMETHEUS_MULTIPROC_DIR`` to an empty, writable
  directory *before* the processes start (wipe it at each deploy). Every process
  writes its counters there and ``/metrics`` merges them
  (``prometheus_client.multiprocess.MultiProcessCollector``). Add to the gunicorn
  config ``def child_exit(server, worker): multiprocess.mark_process_dead(worker.pid)``.
  Celery workers on the same host may share the directory too; otherwise
  their execution counters stay in their own process and the database gauges
  above are the cross-process view.

Access: ``Authorization: Bearer <TOOLHUB_METRICS_TOKEN>`` (setting, read at each
request; empty = no token access), or the staff session of a reviewer or
platform admin. Anything else gets 401/403 and no metric data.
"""

from __future__ import annotations

import hmac
import logging
import os
import time

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

logger = logging.getLogger(__name__)

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

# In multiprocess mode values live in files and the registry is built per scrape;
# otherwise this process's own registry (not the library's global one).
PROCESS_REGISTRY = CollectorRegistry(auto_describe=True)
if not MULTIPROCESS:
    from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR

    for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        PROCESS_REGISTRY.register(_collector)

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
TOOL_TYPES = frozenset({"http", "database", "mcp", "python", "command"})
TERMINAL = frozenset(
    {"succeeded", "failed", "denied", "invalid", "rejected", "expired", "cancelled"}
)
REFUSALS = frozenset({"denied", "invalid"})
MAX_REASON_LENGTH = 40

HTTP_REQUESTS = Counter(
    "toolhub_http_requests",
    "HTTP requests answered, by method, URL pattern name and status class.",
    ["method", "route", "status"],
    registry=PROCESS_REGISTRY,
)
HTTP_LATENCY = Histogram(
    "toolhub_http_request_duration_seconds",
    "Time to answer an HTTP request, by method and URL pattern name.",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=PROCESS_REGISTRY,
)
EXECUTIONS = Counter(
    "toolhub_executions",
    "Executions that reached a terminal status, by tool type and status.",
    ["tool_type", "status"],
    registry=PROCESS_REGISTRY,
)
EXECUTION_LATENCY = Histogram(
    "toolhub_execution_duration_seconds",
    "Run time of finished executions (execution_time_ms), by tool type and status.",
    ["tool_type", "status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
    registry=PROCESS_REGISTRY,
)
REFUSALS_BY_REASON = Counter(
    "toolhub_execution_refusals",
    "Calls refused at admission (denied or invalid), by reason code.",
    ["reason"],
    registry=PROCESS_REGISTRY,
)


def _status_class(status_code: int) -> str:
    return f"{status_code // 100}xx" if 100 <= status_code < 600 else "other"


def _route(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.view_name or "unnamed"


class MetricsMiddleware:
    """Counts every request and times it; put it first in ``MIDDLEWARE`` to time everything."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        try:
            method = request.method if request.method in HTTP_METHODS else "other"
            route = _route(request)
            HTTP_REQUESTS.labels(method, route, _status_class(response.status_code)).inc()
            HTTP_LATENCY.labels(method, route).observe(time.perf_counter() - started)
        except Exception:  # metrics must never break a response
            logger.exception("metrics: could not record a request")
        return response


def _reason_label(reason: str) -> str:
    reason = (reason or "unspecified")[:MAX_REASON_LENGTH]
    return reason if reason.replace("_", "").isalnum() and reason.isascii() else "other"


def record_execution(execution) -> None:
    """Count one execution that reached a terminal status (others are ignored).

    Safe to call from any process and inside or outside a transaction (prefer
    ``transaction.on_commit`` so a rolled-back decision is not counted). Never raises.
    """
    try:
        status = str(execution.status)
        if status not in TERMINAL:
            return
        tool_type = execution.tool_type if execution.tool_type in TOOL_TYPES else "unknown"
        EXECUTIONS.labels(tool_type, status).inc()
        if execution.execution_time_ms is not None:
            EXECUTION_LATENCY.labels(tool_type, status).observe(
                max(0.0, float(execution.execution_time_ms)) / 1000
            )
        if status in REFUSALS:
            REFUSALS_BY_REASON.labels(_reason_label(execution.reason_code)).inc()
    except Exception:
        logger.exception("metrics: could not record an execution")


# Collectors read at scrape time (the apps' database gauges), registered by the
# apps at start-up: toolhub imports no app.
_scrape_collectors: list = []


def scrape_collector_register(collector) -> None:
    if collector not in _scrape_collectors:
        _scrape_collectors.append(collector)


# Who may scrape with an admin session (reviewers and platform admins), decided
# by the registry's access rules and registered by it at start-up. Until then, nobody.
_session_may_scrape = None


def session_scrape_check_register(check) -> None:
    global _session_may_scrape
    _session_may_scrape = check


class _Forward:
    """Exposes another registry's metrics inside the per-scrape registry."""

    def __init__(self, source: CollectorRegistry):
        self.source = source

    def collect(self):
        yield from self.source.collect()


def scrape_registry() -> CollectorRegistry:
    """The registry one scrape is rendered from: process (or merged) metrics plus DB gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if MULTIPROCESS:
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Forward(PROCESS_REGISTRY))
    for collector in _scrape_collectors:
        registry.register(collector)
    return registry


def _bearer(request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _may_scrape_by_session(user) -> bool:
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and user.is_staff
        and _session_may_scrape is not None
        and _session_may_scrape(user)
    )


def _refuse(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


@never_cache
@require_GET
def metrics_view(request):
    """Prometheus text exposition; see the module docstring for who may read it."""
    expected = getattr(settings, "TOOLHUB_METRICS_TOKEN", "") or ""
    given = _bearer(request)
    if given is not None:
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return _refuse(401, "Invalid metrics token.")
    else:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return _refuse(401, "Authentication required.")
        if not _may_scrape_by_session(user):
            return _refuse(403, "Reviewers and platform admins only.")
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
