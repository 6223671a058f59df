"""What the HTTP executor sends: its constants, the failure it raises, values as wire text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from executions.executors.base import ErrorType

MAX_REDIRECTS = 5
ERROR_EXCERPT_CHARS = 2000
USER_AGENT = "ToolHub-HTTPExecutor/1"

QUERY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
METHODS = ("GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH")
AUTH_TYPES = ("none", "bearer_token", "api_key", "basic_auth", "caller_account")
# The caller's own account at an upstream provider: the person's token, from their
# connection (registry.models.upstream), sent as a bearer token to the tool's own origin.
CALLER_ACCOUNT = "caller_account"
DEFAULT_API_KEY_HEADER = "X-API-Key"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
# Methods a server may receive twice without harm: the executor retries only
# these, and the transport resends only these after a hang-up.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# An HTTP token (RFC 9110): what a method or a header name may be made of.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

# Header names that carry credentials; never forwarded to another origin.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ABSOLUTE_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REDIRECT_DRAIN_BYTES = 64 * 1024
_URL_METADATA_CHARS = 2048


class _Failure(Exception):
    def __init__(
        self,
        error_type: str,
        message: str,
        *,
        retryable: bool = False,
        upstream_status: int | None = None,
        output: Any = None,
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.retryable = retryable
        self.upstream_status = upstream_status
        self.output = output


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _pairs(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            pairs.extend((str(key), _scalar(v)) for v in value if v is not None)
        else:
            pairs.append((str(key), _scalar(value)))
    return pairs


def _header_text_problem(name: str, value: str) -> str | None:
    """Why ``value`` cannot be sent as header ``name`` (None when it can)."""
    if "\r" in value or "\n" in value or "\x00" in value:
        return f"the value for header {name!r} contains a line break"
    if not value.isascii():
        return f"the value for header {name!r} must be ASCII"
    return None


def _header_value(name: str, value: Any, error_type: str) -> str:
    text = _scalar(value)
    problem = _header_text_problem(name, text)
    if problem:
        raise _Failure(error_type, problem)
    return text


def _timeout_failure(timeout: float) -> _Failure:
    return _Failure(
        ErrorType.TIMEOUT, f"the upstream did not answer within {timeout:g} s", retryable=True
    )
