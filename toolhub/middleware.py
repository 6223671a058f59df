"""Request id: every request gets one, echoed as ``X-Request-ID``.

An incoming ``X-Request-ID`` from a trusted proxy is kept when it is a sane
token (so traces join up across services); anything else is replaced.

``UnreadBodyDrainMiddleware`` reads what is left of an authenticated request's
body the view did not read (a 413, a refusal before parsing), so the keep-alive
connection stays usable for the client's next request.

``RequestShapeMiddleware`` refuses, before any view, a NUL character in the
path or a query parameter (400) and a chunked body without a Content-Length
(411).
"""

from __future__ import annotations

import contextlib
import logging
import re

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.encoding import escape_uri_path

from toolhub import context, tracing

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def client_address(request) -> str | None:
    # REMOTE_ADDR only: X-Forwarded-For is spoofable unless a proxy we trust
    # rewrites it, and the deployment terminates at gunicorn behind one.
    return request.META.get("REMOTE_ADDR") or None


class RequestIDMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _SAFE_ID.match(incoming) else context.new_request_id()
        request.request_id = request_id
        # For records logged after the request's span ended (TraceLogFilter).
        request.trace_id = tracing.current_trace_id()
        with context.bind(request_id=request_id, client_address=client_address(request)):
            response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


class RequestIDLogFilter(logging.Filter):
    """Put the request id on every record.

    Django logs a 4xx/5xx answer ("Not Found: …") after the middleware has
    returned, outside the bound context; such records carry the request, which
    still holds its id.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = context.current().request_id
        if not request_id:
            request_id = getattr(getattr(record, "request", None), "request_id", None)
        record.request_id = request_id or "-"
        return True


def _refusal(request, status: int, code: str, message: str, details=None) -> HttpResponse:
    """A refusal before any view: the API's error shape under /api/, plain text elsewhere."""
    if request.path_info.startswith("/api/"):
        from toolhub.api.exceptions import error_body

        return JsonResponse(error_body(code, message, details), status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


# gunicorn's --limit-request-line default: the same limit whichever server is in front.
MAX_REQUEST_LINE = 4094


def _request_line_length(request) -> int:
    """The length of ``METHOD /path?query HTTP/1.1`` as sent (the path encoded again)."""
    query = request.META.get("QUERY_STRING", "")
    target = len(escape_uri_path(request.path)) + (len(query) + 1 if query else 0)
    return len(request.method or "") + 1 + target + len(" HTTP/1.1")


def _nul_problem(request) -> tuple[str, str] | None:
    """(field, message) for a path or query parameter holding a NUL character."""
    if "\x00" in request.path_info:
        return "path", "The path contains a NUL character."
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\0")
            return shown, f"Query parameter '{shown}' contains a NUL character."
    return None


class RequestShapeMiddleware:
    """Refuses requests no view can answer rightly, before any runs.

    - A NUL character in the path or a query parameter (400): no name, id or
      filter value contains one and PostgreSQL refuses it in text, so every view
      would fail with a server error.
    - A chunked body without a Content-Length (411): Django reads a body only as
      long as Content-Length says, so it would reach the view empty and be
      answered as if nothing had been sent ("give tool_id or tool").
    - A request line longer than gunicorn's limit (414): the uvicorn workers
      ToolHub is deployed with take any length, so the limit is held here.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = _nul_problem(request)
        if problem is not None:
            field, message = problem
            details = [{"field": field, "message": message, "code": "invalid"}]
            return _refusal(request, 400, "validation_error", message, details)
        if _request_line_length(request) > MAX_REQUEST_LINE:
            message = (
                f"The request line (method, path and query string) is longer than "
                f"{MAX_REQUEST_LINE} bytes: shorten the query."
            )
            return _refusal(request, 414, "request_line_too_long", message)
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            message = (
                "Chunked request bodies are not read: send the body with a Content-Length header."
            )
            return _refusal(request, 411, "length_required", message)
        return self.get_response(request)


# gunicorn drains at most 64 KiB of a body the application left unread, then closes
# the connection although its answer said keep-alive: the client's next request on
# it fails. For authenticated callers (a 413, a refusal before parsing), up to twice
# the accepted body size is read here instead. Anonymous requests are left to
# gunicorn: reading their bodies would let anyone hold a thread with a slow upload.


class UnreadBodyDrainMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        user = getattr(request, "user", None)
        if 0 < length <= _drain_limit() and user is not None and user.is_authenticated:
            # A client gone away leaves nothing to keep alive: whatever reading raises.
            with contextlib.suppress(Exception):
                while request.read(_DRAIN_CHUNK):
                    pass
        return response


_DRAIN_CHUNK = 64 * 1024


def _drain_limit() -> int:
    return 2 * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def database_unavailable(request, exc: BaseException) -> HttpResponse:
    """503 with ``Retry-After`` for a database connection that could not be had: the
    API's error body under /api/, a plain page elsewhere (the admin, the site)."""
    from toolhub.db import pool

    refused = pool.unavailable_from(exc)
    response = _refusal(request, refused.status_code, refused.code, refused.message)
    for name, value in refused.headers.items():
        response[name] = value
    return response


class DatabaseUnavailableMiddleware:
    """A view that cannot get a database connection answers 503, not a server error.

    The REST API's views answer it themselves (``toolhub.api.exceptions``); this covers
    the admin and the site's pages, and ``handler500`` what fails outside any view (a
    session saved as the response leaves)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from toolhub.db import pool

        if pool.is_unavailable(exception):
            return database_unavailable(request, exception)
        return None
