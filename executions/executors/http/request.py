"""One call's request built from its configs and inputs: URL, headers, query and body."""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from executions import egress
from executions.executors.base import ErrorType, ToolCall
from executions.executors.configs import (
    is_unset,
)
from executions.executors.http.auth import _auth_headers, _mapped_headers
from executions.executors.http.configs import _config
from executions.executors.http.values import (
    _ABSOLUTE_URL,
    _CREDENTIAL_HEADERS,
    _PLACEHOLDER,
    CALLER_ACCOUNT,
    FORM_CONTENT_TYPE,
    QUERY_METHODS,
    _Failure,
    _pairs,
    _scalar,
)


@dataclass
class _Prepared:
    method: str
    url: httpx.URL
    headers: list[tuple[str, str]]
    content: bytes | None
    timeout: float
    max_response_bytes: int
    # Lower-cased names of headers not forwarded when a redirect leaves the origin.
    sensitive_headers: set[str] = field(default_factory=set)


def _timeout(call: ToolCall) -> float:
    if not is_unset(call.configs.get("timeout_seconds")):
        return _config(call.configs, "timeout_seconds")
    raw = call.timeout_seconds
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise _Failure(
            ErrorType.CONFIG, f"the call's timeout must be a number, got {raw!r}"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise _Failure(
            ErrorType.CONFIG, f"the call's timeout must be a positive number, got {raw!r}"
        )
    return value


def _render_url(template: str, inputs: Mapping[str, Any], consumed: set[str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if inputs.get(name) is None:
            raise _Failure(
                ErrorType.INPUT, f"missing value for path placeholder {{{name}}}: input {name!r}"
            )
        consumed.add(name)
        value = _scalar(inputs[name])
        if value.strip() in (".", ".."):
            # Slashes are encoded, but a whole "." or ".." segment still moves the path
            # (/items/../admin): an argument never walks the upstream's tree.
            raise _Failure(
                ErrorType.INPUT,
                f"path placeholder {{{name}}} may not be '.' or '..' (input {name!r})",
            )
        return quote(value, safe="")

    return _PLACEHOLDER.sub(substitute, template)


def _url_template(configs: Mapping[str, Any]) -> str:
    endpoint = _config(configs, "endpoint") or ""
    if endpoint and _ABSOLUTE_URL.match(endpoint):
        return endpoint
    base = _config(configs, "base_url") or ""
    if not base:
        raise _Failure(
            ErrorType.CONFIG, "config 'base_url' is required (or an absolute 'endpoint')"
        )
    if not endpoint:
        return base
    return base.rstrip("/") + "/" + endpoint.lstrip("/")


def _prepare(call: ToolCall, secrets: list[str]) -> _Prepared:
    configs, inputs = call.configs, call.inputs
    timeout = _timeout(call)
    method = _config(configs, "method")
    consumed: set[str] = set()
    headers, sensitive = _request_headers(configs, inputs, consumed, secrets, call.caller_token)
    url = _request_url(configs, inputs, consumed, secrets)
    if _config(configs, "auth_type") == CALLER_ACCOUNT:
        _only_to_the_tools_origin(configs, url, headers)
    payload = {k: v for k, v in inputs.items() if k not in consumed}
    query: list[tuple[str, str]] = list(url.params.multi_items())
    content: bytes | None = None
    if method in QUERY_METHODS:
        query += _pairs(payload)
    else:
        content = _body(payload, headers)
    static_query = _config(configs, "query_params")
    if static_query:
        static_pairs = _pairs(static_query)
        static_keys = {k for k, _ in static_pairs}
        query = [(k, v) for k, v in query if k not in static_keys] + static_pairs
    if query or url.query:
        url = url.copy_with(params=httpx.QueryParams(query))
    limit = max(0, int(call.max_response_bytes))
    return _Prepared(method, url, headers, content, timeout, limit, sensitive)


def _request_headers(
    configs: Mapping[str, Any],
    inputs: Mapping[str, Any],
    consumed: set[str],
    secrets: list[str],
    caller_token: str = "",
) -> tuple[list[tuple[str, str]], set[str]]:
    """The headers sent (auth and mapped inputs override static ones) and the lower-cased
    names of those not forwarded to another origin."""
    static_headers = _config(configs, "headers")
    headers: list[tuple[str, str]] = [
        (name, value) for name, value in static_headers.items() if value is not None
    ]
    auth = _auth_headers(configs, secrets, caller_token)
    mapped = _mapped_headers(configs, inputs, consumed, secrets)
    overriding = {name.lower() for name, _ in auth + mapped}
    headers = [(n, v) for n, v in headers if n.lower() not in overriding] + auth + mapped

    sensitive = set(_CREDENTIAL_HEADERS) | overriding
    secret_values = [s for s in secrets if s]
    sensitive |= {n.lower() for n, v in headers if any(s in v for s in secret_values)}
    return headers, sensitive


def _origin_of(url: httpx.URL) -> tuple[str, str, int]:
    scheme = url.scheme.lower()
    return scheme, url.raw_host.decode("ascii").lower(), url.port or egress.DEFAULT_PORTS[scheme]


def _only_to_the_tools_origin(
    configs: Mapping[str, Any], url: httpx.URL, headers: list[tuple[str, str]]
) -> None:
    """A caller's own token goes to the origin of the tool's ``base_url`` and nowhere else:
    not to an absolute ``endpoint`` elsewhere, not to a host an input fills in, not
    replaced by URL credentials or a header an input sets (redirects to another origin
    drop it: ``sending``)."""
    base = _config(configs, "base_url") or ""
    authority = base.split("://", 1)[-1].split("/", 1)[0]
    if not base or _PLACEHOLDER.search(authority):
        raise _Failure(
            ErrorType.CONFIG,
            "auth_type 'caller_account' needs a base_url whose scheme, host and port are "
            "fixed (no {placeholder}): its origin is the only one the caller's token goes to",
        )
    try:
        allowed = _origin_of(httpx.URL(base))
    except (httpx.InvalidURL, KeyError, UnicodeError):
        raise _Failure(ErrorType.CONFIG, "base_url is not an absolute http(s) URL") from None
    if url.userinfo or _origin_of(url) != allowed:
        raise _Failure(
            ErrorType.CONFIG,
            "auth_type 'caller_account': the caller's token goes to the origin of base_url "
            f"only ({allowed[0]}://{allowed[1]}:{allowed[2]}), and this call's URL is "
            "elsewhere or carries credentials of its own",
        )
    names = [name.lower() for name, _ in headers]
    if names.count("authorization") != 1:
        raise _Failure(
            ErrorType.CONFIG,
            "auth_type 'caller_account' sends the caller's token as the Authorization "
            "header: no other config or input may set it (headers_input_map)",
        )


def _request_url(
    configs: Mapping[str, Any], inputs: Mapping[str, Any], consumed: set[str], secrets: list[str]
) -> httpx.URL:
    """The absolute URL with its placeholders filled; credentials in it become secrets."""
    raw_url = _render_url(_url_template(configs), inputs, consumed)
    try:
        url = httpx.URL(raw_url)
    except httpx.InvalidURL as exc:
        raise _Failure(ErrorType.CONFIG, f"invalid URL {raw_url!r}: {exc}") from None
    if url.scheme:
        egress.check_scheme(url.scheme, url.raw_host.decode("ascii", "replace"))
    if not url.scheme or not url.raw_host:
        raise _Failure(ErrorType.CONFIG, f"{raw_url!r} is not an absolute http(s) URL")
    if url.password:
        # Credentials in the URL become basic auth (httpx); treat them as secrets.
        token = base64.b64encode(f"{url.username}:{url.password}".encode()).decode("ascii")
        secrets.extend([url.password, token, url.userinfo.decode("ascii")])
    return url


def _body(payload: Mapping[str, Any], headers: list[tuple[str, str]]) -> bytes:
    """The inputs as a JSON or form body; a Content-Type header is added when none is set."""
    content_type = next((v for n, v in headers if n.lower() == "content-type"), "application/json")
    if content_type.lower().startswith(FORM_CONTENT_TYPE):
        content = urlencode(_pairs(payload)).encode("ascii")
    else:
        content = json.dumps(
            payload, separators=(",", ":"), ensure_ascii=False, default=str
        ).encode("utf-8")
    if not any(n.lower() == "content-type" for n, _ in headers):
        headers.append(("Content-Type", content_type))
    return content
