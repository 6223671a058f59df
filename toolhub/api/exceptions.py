"""Every API error has one shape: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from toolhub.db import pool
from toolhub.exceptions import ToolHubError

logger = logging.getLogger(__name__)


class PayloadTooLarge(drf.APIException):
    status_code = 413
    default_detail = "Request body is too large."
    default_code = "payload_too_large"


def _flatten(detail, prefix: str = "") -> list[dict]:
    """Turn DRF's nested error detail into a list of ``{field, message, code}``."""
    items: list[dict] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                field = prefix
            elif isinstance(key, int) or (isinstance(key, str) and key.isdecimal()):
                field = f"{prefix}[{key}]"
            else:
                field = f"{prefix}.{key}" if prefix else str(key)
            items.extend(_flatten(value, field))
    elif isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            for item in detail:
                items.append(
                    {
                        "field": prefix or None,
                        "message": str(item),
                        "code": getattr(item, "code", None),
                    }
                )
        else:
            for index, item in enumerate(detail):
                items.extend(_flatten(item, f"{prefix}[{index}]" if prefix else f"[{index}]"))
    else:
        items.append(
            {"field": prefix or None, "message": str(detail), "code": getattr(detail, "code", None)}
        )
    return items


def error_body(code: str, message: str, details=None) -> dict:
    return {"error": {"code": code, "message": message, "details": details}}


def _named_scheme(exc: drf.NotAuthenticated, request) -> drf.NotAuthenticated:
    """No credentials were accepted, but an Authorization header was sent: say that its
    scheme is not one the API takes (``Basic …``, a bare token) instead of "not provided"."""
    header = (getattr(request, "META", None) or {}).get("HTTP_AUTHORIZATION", "")
    parts = header.split()
    if not parts or parts[0].lower() in ("bearer", "token"):
        return exc
    # Only a scheme followed by credentials is named; a lone value may be a secret.
    scheme = parts[0] if len(parts) > 1 and len(parts[0]) <= 20 and parts[0].isascii() else ""
    scheme = scheme if scheme.replace("-", "").isalnum() else ""
    named = drf.NotAuthenticated(
        (
            f"The Authorization scheme {scheme!r} is not accepted"
            if scheme
            else "The Authorization header is not in a form the API accepts"
        )
        + ": send 'Authorization: Bearer <token>'."
    )
    named.auth_header = getattr(exc, "auth_header", None)
    return named


def _absolute_urls(extra: dict, request) -> dict:
    """An error's extra keys, a ``*_url`` given as a path of this site made absolute (where
    to go next: the page connecting an upstream account)."""
    if request is None:
        return extra
    return {
        key: request.build_absolute_uri(value)
        if key.endswith("_url") and isinstance(value, str) and value.startswith("/")
        else value
        for key, value in extra.items()
    }


def exception_handler(exc, context):
    headers: dict[str, str] = {}
    if pool.is_unavailable(exc):  # no database connection could be had: 503, Retry-After
        exc = pool.unavailable_from(exc)
    if isinstance(exc, ToolHubError):
        body = error_body(exc.code, exc.message, exc.details)
        body["error"].update(_absolute_urls(exc.extra, context.get("request")))
        return Response(body, status=exc.status_code, headers=getattr(exc, "headers", None))
    if isinstance(exc, Http404):
        exc = drf.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if not isinstance(exc, drf.APIException):
        return None  # a real bug: let Django log it and answer 500

    if isinstance(exc, drf.NotAuthenticated):
        exc = _named_scheme(exc, context.get("request"))
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))

    if isinstance(exc, drf.ValidationError):
        details = _flatten(exc.detail)
        named = ", ".join(
            f"{item['field']}: {item['message']}" if item["field"] else item["message"]
            for item in details
        )
        body = error_body("validation_error", f"Invalid input. {named}", details)
    else:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        body = error_body(code, str(exc.detail), None)
    return Response(body, status=exc.status_code, headers=headers)
