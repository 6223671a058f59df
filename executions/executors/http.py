"""The HTTP executor: one governed call to an HTTP API.

Configs (``call.configs``):

* ``base_url`` and/or ``endpoint`` (an absolute ``endpoint`` overrides
  ``base_url``; otherwise they are concatenated with one ``/``). ``{name}``
  placeholders are filled from the inputs (URL-encoded, ``/`` included) and the
  inputs they use are consumed.
* ``method`` (default GET), ``timeout_seconds`` (overrides the call's timeout).
* ``headers`` and ``query_params``: JSON objects (or JSON strings of them),
  always sent. A static query parameter wins over an input of the same name.
* ``auth_type``: ``bearer_token`` (the token in ``api_key``, as the seed
  contract says, or in its alias ``bearer_token``, which wins when both are
  set), ``api_key`` (``api_key``, header ``api_key_header``, default
  ``X-API-Key``) or ``basic_auth`` (``username``, ``password``).
* ``headers_input_map``: ``{"input": "Header-Name"}`` or
  ``{"input": {"header": "Authorization", "template": "Bearer {value}"}}``:
  the input is sent as that header instead of in the query/body, and its value
  is treated as a secret of this call.

``CONFIGS`` declares these keys and their values once: the executor reads them
through it, and the registry checks a config against it when it is saved.

The remaining inputs go to the query string for GET/HEAD/OPTIONS/DELETE and to
a JSON body for POST/PUT/PATCH (form-encoded when the static ``Content-Type``
header says ``application/x-www-form-urlencoded``).

Every connection goes through the egress guard (``executions.egress``) and is
pinned to the addresses it checked; redirects are followed here (at most
``MAX_REDIRECTS``), each hop checked again. Credentials are not forwarded to
another origin on a redirect.

Output: ``{"status_code", "data", "headers"}``. ``data`` is the parsed JSON
when the body is JSON, else its text (``None`` for an empty body); a body that
is not text in its charset is base64, with ``"data_encoding": "base64"``. The body is
read as a stream and at most ``call.max_response_bytes + 1`` bytes are kept:
when the upstream sends more, ``data`` is the text of the first
``max_response_bytes`` bytes (never parsed as JSON, cut before any partial
secret), ``metadata["truncated"]`` is True and ``metadata["full_size"]`` is the
announced Content-Length when there is one. The pipeline decides what to do
with a truncated result.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from executions import egress
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.configs import (
    ConfigError,
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    choice_words,
    credential_names,
    got,
    is_unset,
    json_object,
    one_of,
    plain_credential,
    positive_number,
    shown,
    text,
    url_credentials,
)
from executions.executors.wire import HEADER_NAME, IDEMPOTENT_METHODS, PinnedTransport
from executions.redaction import redact, redact_text, with_encoded_forms

MAX_REDIRECTS = 5
ERROR_EXCERPT_CHARS = 2000
USER_AGENT = "ToolHub-HTTPExecutor/1"

QUERY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
METHODS = ("GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH")
AUTH_TYPES = ("none", "bearer_token", "api_key", "basic_auth")
DEFAULT_API_KEY_HEADER = "X-API-Key"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"

# Header names that carry credentials; never forwarded to another origin.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ABSOLUTE_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REDIRECT_DRAIN_BYTES = 64 * 1024
_URL_METADATA_CHARS = 2048


class _NoRequestLines(logging.Filter):
    """httpx logs every request URL at INFO; URLs may carry secrets (query, path), so drop those lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("HTTP Request:")


logging.getLogger("httpx").addFilter(_NoRequestLines())

# Sent with every request unless the tool's own headers name them. There is
# no cookie jar anywhere: a cookie one upstream sets never rides along a call.
_DEFAULT_HEADERS = (
    ("Accept", "*/*"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("User-Agent", USER_AGENT),
)

_transport: PinnedTransport | None = None
_transport_pid: int | None = None
_transport_lock = threading.Lock()


def get_transport() -> PinnedTransport:
    """The process-wide connection pool (created lazily; recreated after a fork)."""
    global _transport, _transport_pid
    transport, pid = _transport, os.getpid()
    if transport is not None and _transport_pid == pid:
        return transport
    with _transport_lock:
        if _transport is None or _transport_pid != pid:
            # After a fork the parent's pool is abandoned, not closed: its
            # sockets belong to the parent.
            _transport = PinnedTransport()
            _transport_pid = pid
        return _transport


def close_transport() -> None:
    """Close the shared pool (tests, shutdown); the next call creates a new one."""
    global _transport, _transport_pid
    with _transport_lock:
        if _transport is not None and _transport_pid == os.getpid():
            _transport.close()
        _transport, _transport_pid = None, None


def _with_url_credentials(url: httpx.URL, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Credentials written in the URL (``user:pass@host``) are sent as basic auth."""
    if not (url.username or url.password):
        return headers
    token = base64.b64encode(f"{url.username}:{url.password}".encode()).decode("ascii")
    kept = [(n, v) for n, v in headers if n.lower() != "authorization"]
    return [*kept, ("Authorization", f"Basic {token}")]


def _with_defaults(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    named = {name.lower() for name, _ in headers}
    return [(n, v) for n, v in _DEFAULT_HEADERS if n.lower() not in named] + headers


# --------------------------------------------------------------------------- preparation


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


# --------------------------------------------------------------------------- config keys


def _header_name(value: Any) -> str:
    if not isinstance(value, str) or not HEADER_NAME.match(value):
        raise ConfigValueError(f"{shown(value)} is not a valid header name")
    return value


def _headers(value: Any) -> dict[str, str | None]:
    """Static headers: names checked, values as sent (``None``: not sent)."""
    headers: dict[str, str | None] = {}
    for name, item in json_object(value).items():
        _header_name(name)
        if item is None:
            headers[name] = None
            continue
        rendered = _scalar(item)
        problem = _header_text_problem(name, rendered)
        if problem:
            raise ConfigValueError(problem)
        headers[name] = rendered
    return headers


def _credential(value: Any) -> str:
    """A token or key sent in a header: a string (or a whole number) fit for a header."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    rendered = str(value)
    if "\r" in rendered or "\n" in rendered or "\x00" in rendered:
        raise ConfigValueError("it contains a line break")
    if not rendered.isascii():
        raise ConfigValueError("it is not ASCII")
    return rendered


def _username(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    if ":" in str(value):
        raise ConfigValueError("it contains ':'")
    return str(value)


def _password(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    return str(value)


def _absolute_url(value: Any) -> str:
    url = text(value)
    if not _ABSOLUTE_URL.match(url):
        raise ConfigValueError(got(value))
    return url


def _check_url(value: str) -> None:
    """At save time: an absolute URL must parse and use a scheme the egress guard allows."""
    url = value.strip()
    if not _ABSOLUTE_URL.match(url):
        return  # a relative endpoint: appended to base_url
    try:
        parsed = httpx.URL(_PLACEHOLDER.sub("0", url))
        parsed.host  # noqa: B018 - decodes the host: an invalid IDNA label raises here
    except httpx.InvalidURL as exc:
        raise ConfigValueError(f"{shown(url)} is not a valid URL ({exc})") from None
    except UnicodeError as exc:  # idna.IDNAError
        raise ConfigValueError(f"{shown(url)} has an invalid host name ({exc})") from None
    if parsed.scheme.lower() not in egress.ALLOWED_SCHEMES or not parsed.raw_host:
        raise ConfigValueError(got(url))


@dataclass(frozen=True)
class HeaderFromInput:
    header: str
    template: str = "{value}"


_INPUT_MAP_KEYS = ("header", "template")


def _headers_input_map(value: Any) -> dict[str, HeaderFromInput]:
    mapped: dict[str, HeaderFromInput] = {}
    for input_name, target in json_object(value).items():
        where = f"input {input_name!r}"
        template = "{value}"
        if isinstance(target, Mapping):
            unknown = sorted(str(k) for k in target if k not in _INPUT_MAP_KEYS)
            if unknown:
                raise ConfigValueError(
                    f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                    "(only 'header' and 'template')"
                )
            header = target.get("header")
            if not is_unset(target.get("template")):
                template = target["template"]
                if not isinstance(template, str):
                    raise ConfigValueError(f"{where}: the template must be a string")
                problem = _header_text_problem(str(header), template)
                if problem:
                    raise ConfigValueError(f"{where}: {problem} (in its template)")
        elif isinstance(target, str):
            header = target
        else:
            raise ConfigValueError(f"{where}: {got(target)}")
        if _is_host(header):
            raise ConfigValueError(
                f"{where}: a Host header is not allowed (the URL names the host)"
            )
        try:
            mapped[str(input_name)] = HeaderFromInput(_header_name(header), template)
        except ConfigValueError as exc:
            raise ConfigValueError(f"{where}: {exc}") from None
    return mapped


# Header names that carry credentials: in plain static headers they would be shown to
# every reader of the tool and written into the audit log.
_CREDENTIAL_HEADER_NAME = re.compile(
    r"^(authorization|proxy-authorization|cookie)$|token|secret|api[-_]?key|password|auth"
    r"|^(x-)?key$|access[-_]?key|subscription[-_]?key|signature|credential",
    re.IGNORECASE,
)


def _no_plain_credentials(value: Any) -> None:
    names = sorted(n for n in value if isinstance(n, str) and _CREDENTIAL_HEADER_NAME.search(n))
    if names:
        raise ConfigValueError(
            f"header {', '.join(names)} carries a credential: mark the config secret, or use "
            "auth_type with a secret bearer_token/api_key"
        )


def _no_plain_url_password(value: Any) -> None:
    found = url_credentials(value) if isinstance(value, str) else None
    if found:
        raise ConfigValueError(
            f"it carries a credential ({found}): mark the config secret, or use auth_type "
            "with a secret bearer_token, api_key or password"
        )


def _is_host(name: Any) -> bool:
    return isinstance(name, str) and name.strip().lower() == "host"


def _no_host_header(value: Any) -> None:
    """The URL names the host; a Host header would send the call (and its credentials)
    to another site behind the same address."""
    names = json_object(value) if not isinstance(value, dict) else value
    if any(_is_host(n) for n in names):
        raise ConfigValueError("a Host header is not allowed: the URL names the host")


def _no_plain_credential_params(value: Any) -> None:
    names = credential_names(value)
    if names:
        raise ConfigValueError(
            f"query parameter {', '.join(names)} carries a credential: mark the config "
            "secret, or use auth_type with a secret api_key"
        )


_CREDENTIAL = "a string of ASCII characters without line breaks"
_ABSOLUTE = "an absolute http(s) URL ({input} placeholders allowed)"

CONFIGS = ExecutorConfigs(
    "http",
    [
        ConfigKey(
            "base_url",
            _ABSOLUTE,
            _absolute_url,
            check=_check_url,
            plain_check=_no_plain_url_password,
            destination=True,
        ),
        ConfigKey(
            "endpoint",
            f"a path appended to base_url, or {_ABSOLUTE}",
            text,
            check=_check_url,
            plain_check=_no_plain_url_password,
            destination=True,
        ),
        ConfigKey("method", f"one of {choice_words(METHODS)}", one_of(METHODS, upper=True), "GET"),
        ConfigKey("timeout_seconds", "a positive number of seconds", positive_number),
        ConfigKey(
            "headers",
            "a JSON object of header names to values (ASCII, without line breaks)",
            _headers,
            {},
            check=_no_host_header,
            plain_check=_no_plain_credentials,
        ),
        ConfigKey(
            "query_params",
            "a JSON object of query parameter names to values",
            json_object,
            {},
            plain_check=_no_plain_credential_params,
        ),
        ConfigKey(
            "auth_type",
            f"one of {choice_words(AUTH_TYPES)}",
            one_of(AUTH_TYPES),
            "none",
            sends_credentials=True,
        ),
        ConfigKey("bearer_token", _CREDENTIAL, _credential, plain_check=plain_credential),
        ConfigKey("api_key", _CREDENTIAL, _credential, plain_check=plain_credential),
        ConfigKey(
            "api_key_header",
            "a valid HTTP header name",
            _header_name,
            DEFAULT_API_KEY_HEADER,
            sends_credentials=True,
        ),
        ConfigKey("username", "a string without ':'", _username),
        ConfigKey("password", "a string", _password, plain_check=plain_credential),
        ConfigKey(
            "headers_input_map",
            'a JSON object of input names to a header name, or to {"header": name, '
            '"template": "… {value} …"}',
            _headers_input_map,
            {},
        ),
    ],
)


def _config(configs: Mapping[str, Any], name: str) -> Any:
    try:
        return CONFIGS.read(configs, name)
    except ConfigError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None


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


def _auth_headers(configs: Mapping[str, Any], secrets: list[str]) -> list[tuple[str, str]]:
    auth_type = _config(configs, "auth_type")
    if auth_type == "none":
        return []
    if auth_type == "bearer_token":
        # The seed's form keeps the token in `api_key`; `bearer_token` names it too.
        token = _config(configs, "bearer_token") or _config(configs, "api_key")
        if not token:
            raise _Failure(
                ErrorType.CONFIG,
                "auth_type 'bearer_token' needs config 'api_key' (or its alias 'bearer_token')",
            )
        secrets.append(token)
        return [
            ("Authorization", _header_value("Authorization", f"Bearer {token}", ErrorType.CONFIG))
        ]
    if auth_type == "api_key":
        key = _config(configs, "api_key")
        if not key:
            raise _Failure(ErrorType.CONFIG, "auth_type 'api_key' needs config 'api_key'")
        header = _config(configs, "api_key_header")
        secrets.append(key)
        return [(header, _header_value(header, key, ErrorType.CONFIG))]
    # basic_auth: CONFIGS admits no other auth_type
    username, password = _config(configs, "username"), _config(configs, "password")
    if not username or not password:
        raise _Failure(
            ErrorType.CONFIG, "auth_type 'basic_auth' needs configs 'username' and 'password'"
        )
    token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
    secrets.extend([password, token])
    return [("Authorization", f"Basic {token}")]


def _mapped_headers(
    configs: Mapping[str, Any], inputs: Mapping[str, Any], consumed: set[str], secrets: list[str]
) -> list[tuple[str, str]]:
    mapping: dict[str, HeaderFromInput] = _config(configs, "headers_input_map")
    headers: list[tuple[str, str]] = []
    for input_name, target in mapping.items():
        consumed.add(input_name)  # never sent in the query or body, even when empty
        value = inputs.get(input_name)
        if value is None:
            continue
        raw = _scalar(value)
        rendered = target.template.replace("{value}", raw)  # no str.format: no attribute access
        secrets.extend([raw, rendered])
        headers.append((target.header, _header_value(target.header, rendered, ErrorType.INPUT)))
    return headers


def _prepare(call: ToolCall, secrets: list[str]) -> _Prepared:
    configs, inputs = call.configs, call.inputs
    timeout = _timeout(call)
    method = _config(configs, "method")
    static_headers = _config(configs, "headers")
    static_query = _config(configs, "query_params")
    consumed: set[str] = set()

    headers: list[tuple[str, str]] = [
        (name, value) for name, value in static_headers.items() if value is not None
    ]
    auth = _auth_headers(configs, secrets)
    mapped = _mapped_headers(configs, inputs, consumed, secrets)
    overriding = {name.lower() for name, _ in auth + mapped}
    headers = [(n, v) for n, v in headers if n.lower() not in overriding] + auth + mapped

    sensitive = set(_CREDENTIAL_HEADERS) | overriding
    secret_values = [s for s in secrets if s]
    sensitive |= {n.lower() for n, v in headers if any(s in v for s in secret_values)}

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

    payload = {k: v for k, v in inputs.items() if k not in consumed}
    content: bytes | None = None
    query: list[tuple[str, str]] = list(url.params.multi_items())
    if method in QUERY_METHODS:
        query += _pairs(payload)
    else:
        content_type = next(
            (v for n, v in headers if n.lower() == "content-type"), "application/json"
        )
        if content_type.lower().startswith(FORM_CONTENT_TYPE):
            content = urlencode(_pairs(payload)).encode("ascii")
        else:
            content = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str)
            content = content.encode("utf-8")
        if not any(n.lower() == "content-type" for n, _ in headers):
            headers.append(("Content-Type", content_type))
    if static_query:
        static_pairs = _pairs(static_query)
        static_keys = {k for k, _ in static_pairs}
        query = [(k, v) for k, v in query if k not in static_keys] + static_pairs
    if query or url.query:
        url = url.copy_with(params=httpx.QueryParams(query))

    limit = max(0, int(call.max_response_bytes))
    return _Prepared(method, url, headers, content, timeout, limit, sensitive)


def _trim_partial_secret(text: str, secrets: Iterable[str]) -> str:
    """Cut the end of a truncated text when it ends with the beginning of a secret."""
    for secret in secrets:
        for k in range(min(len(secret) - 1, len(text)), 0, -1):
            if text.endswith(secret[:k]):
                text = text[:-k]
                break
    return text


# --------------------------------------------------------------------------- the executor


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    scheme = url.scheme.lower()
    return (
        scheme,
        url.raw_host.decode("ascii").lower(),
        url.port or egress.DEFAULT_PORTS.get(scheme, 0),
    )


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(0.0, round(seconds, 3))


def _holds_secret(body: bytes, secrets: list[str]) -> bool:
    return any(s.encode("utf-8", "ignore") in body for s in secrets if s)


def _response_headers(response: httpx.Response) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        key = name.lower()
        if key in ("set-cookie", "set-cookie2"):
            continue
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


class HTTPExecutor:
    kind = "http"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        secrets: list[str] = [str(s) for s in call.secret_values if s is not None]
        metadata: dict[str, Any] = {}
        method = str(call.configs.get("method") or "GET").strip().upper()
        idempotent = method in IDEMPOTENT_METHODS
        try:
            result = self._run(call, secrets, metadata)
        except _Failure as failure:
            result = ExecutorResult(
                ok=False,
                output=failure.output,
                error_type=failure.error_type,
                error_message=failure.message,
                retryable=failure.retryable and idempotent,
                upstream_status=failure.upstream_status,
            )
        except egress.EgressDenied as exc:
            result = ExecutorResult(
                ok=False, error_type=ErrorType.EGRESS_DENIED, error_message=str(exc)
            )
        result.metadata = {**metadata, **result.metadata}
        result.latency_ms = round((time.perf_counter() - started) * 1000, 3)
        return self._redacted(result, secrets)

    @staticmethod
    def _redacted(result: ExecutorResult, secrets: list[str]) -> ExecutorResult:
        variants = with_encoded_forms(secrets)
        if not variants:
            return result
        result.output = redact(result.output, variants)
        if result.error_message is not None:
            result.error_message = redact_text(result.error_message, variants)
        result.metadata = redact(result.metadata, variants)
        return result

    def _run(self, call: ToolCall, secrets: list[str], metadata: dict[str, Any]) -> ExecutorResult:
        prepared = _prepare(call, secrets)
        metadata["method"] = prepared.method
        response, body, truncated = self._send(prepared, metadata)
        return self._interpret(prepared, response, body, truncated, secrets, metadata)

    def _send(
        self, prepared: _Prepared, metadata: dict[str, Any]
    ) -> tuple[httpx.Response, bytes, bool]:
        transport = get_transport()
        deadline = time.monotonic() + prepared.timeout
        method, url, content = prepared.method, prepared.url, prepared.content
        headers = list(prepared.headers)
        origin = _origin(url)
        metadata["redirects"] = 0
        for hop in range(MAX_REDIRECTS + 1):
            try:
                url.host  # noqa: B018 - httpx decodes it to build the request
            except UnicodeError as exc:  # idna.IDNAError: an invalid A-label
                where = "the URL" if hop == 0 else "the redirect"
                raise _Failure(
                    ErrorType.CONFIG if hop == 0 else ErrorType.UPSTREAM,
                    f"{where} has an invalid host name ({exc})",
                ) from None
            metadata["url"] = str(url.copy_with(userinfo=b""))[:_URL_METADATA_CHARS]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout_failure(prepared.timeout)
            request = httpx.Request(
                method,
                url,
                headers=_with_defaults(_with_url_credentials(url, headers)),
                content=content,
                extensions={
                    "timeout": dict.fromkeys(("connect", "read", "write", "pool"), remaining)
                },
            )
            try:
                response = transport.handle_request(request)
            except egress.EgressDenied as exc:
                prefix = f"redirect {hop} to {url} " if hop else ""
                raise _Failure(ErrorType.EGRESS_DENIED, f"{prefix}{exc}") from None
            except egress.HostResolutionError as exc:
                raise _Failure(ErrorType.CONNECTION, str(exc), retryable=True) from None
            except httpx.TimeoutException:
                raise self._timeout_failure(prepared.timeout) from None
            except httpx.LocalProtocolError as exc:
                raise _Failure(ErrorType.CONFIG, f"could not send the request: {exc}") from None
            except httpx.TransportError as exc:
                raise _Failure(
                    ErrorType.CONNECTION,
                    f"connection to {url.raw_host.decode('ascii', 'replace')}:"
                    f"{url.port or origin[2]} failed: {exc or type(exc).__name__}",
                    retryable=True,
                ) from None
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    if hop == MAX_REDIRECTS:
                        raise _Failure(
                            ErrorType.UPSTREAM,
                            f"too many redirects (more than {MAX_REDIRECTS})",
                            upstream_status=response.status_code,
                        )
                    self._drain(response, deadline)
                    try:
                        next_url = response.url.join(location.strip())
                    except httpx.InvalidURL:
                        raise _Failure(
                            ErrorType.UPSTREAM,
                            f"HTTP {response.status_code} redirect to an invalid location",
                            upstream_status=response.status_code,
                        ) from None
                    next_url = next_url.copy_with(fragment=None)
                    status = response.status_code
                    if (status == 303 and method != "HEAD") or (
                        status in (301, 302) and method == "POST"
                    ):
                        method, content = "GET", None
                        headers = [
                            (n, v)
                            for n, v in headers
                            if n.lower() not in ("content-type", "content-length")
                        ]
                    if _origin(next_url) != origin:
                        headers = [
                            (n, v)
                            for n, v in headers
                            if n.lower() not in prepared.sensitive_headers
                        ]
                        origin = _origin(next_url)
                    url = next_url
                    metadata["redirects"] = hop + 1
                    continue
                body, truncated = self._read(response, prepared, deadline)
                return response, body, truncated
            except httpx.TimeoutException:
                raise self._timeout_failure(prepared.timeout) from None
            except httpx.DecodingError as exc:
                raise _Failure(
                    ErrorType.UPSTREAM, f"could not decode the response body: {exc}"
                ) from None
            except httpx.TransportError as exc:
                raise _Failure(
                    ErrorType.CONNECTION,
                    f"connection dropped while reading the response: {exc or type(exc).__name__}",
                    retryable=True,
                ) from None
            finally:
                response.close()
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _timeout_failure(timeout: float) -> _Failure:
        return _Failure(
            ErrorType.TIMEOUT, f"the upstream did not answer within {timeout:g} s", retryable=True
        )

    @staticmethod
    def _drain(response: httpx.Response, deadline: float) -> None:
        """Read a little of a redirect's body so its connection can go back to the pool."""
        read = 0
        for chunk in response.iter_raw():
            read += len(chunk)
            if read > _REDIRECT_DRAIN_BYTES or time.monotonic() > deadline:
                break

    def _read(
        self, response: httpx.Response, prepared: _Prepared, deadline: float
    ) -> tuple[bytes, bool]:
        """Stream the body, keeping at most ``max_response_bytes`` (one more byte means truncated)."""
        limit = prepared.max_response_bytes
        buffer = bytearray()
        for chunk in response.iter_bytes():
            buffer += chunk
            if len(buffer) > limit:
                return bytes(buffer[:limit]), True
            if time.monotonic() > deadline:
                raise self._timeout_failure(prepared.timeout)
        return bytes(buffer), False

    def _interpret(
        self,
        prepared: _Prepared,
        response: httpx.Response,
        body: bytes,
        truncated: bool,
        secrets: list[str],
        metadata: dict[str, Any],
    ) -> ExecutorResult:
        status = response.status_code
        content_type = response.headers.get("content-type", "")
        charset = response.encoding or "utf-8"
        try:
            text, undecodable = body.decode(charset), False
        except UnicodeDecodeError:
            text, undecodable = body.decode(charset, errors="replace"), True
        variants = with_encoded_forms(secrets)
        if truncated:
            text = _trim_partial_secret(text, variants)

        data: Any = text if text else None
        encoding = None
        if undecodable and not truncated and not _holds_secret(body, variants):
            # Not text in its charset (an image, a PDF): kept whole as base64, not mangled
            # with replacement characters. A body holding a secret stays text, redacted.
            data, encoding = base64.b64encode(body).decode("ascii"), "base64"
        elif text and not truncated:
            stripped = text.lstrip()
            if "json" in content_type.lower() or stripped[:1] in ("{", "["):
                try:
                    data = json.loads(text)
                except (ValueError, RecursionError):
                    data = text

        metadata["truncated"] = truncated
        metadata["response_bytes"] = len(body)
        if content_type:
            metadata["content_type"] = content_type
        if truncated:
            length = response.headers.get("content-length")
            encoding = response.headers.get("content-encoding", "identity").lower()
            if length and length.isdecimal() and encoding == "identity":
                metadata["full_size"] = int(length)
        if status in (429, 503):
            retry_after = _retry_after(response.headers.get("retry-after"))
            if retry_after is not None:
                metadata["retry_after"] = retry_after

        output = {"status_code": status, "data": data, "headers": _response_headers(response)}
        if encoding:
            output["data_encoding"] = encoding
        if status < 400:
            return ExecutorResult(ok=True, output=output, upstream_status=status)

        excerpt = redact_text(text, variants) if text else "(empty body)"
        if len(excerpt) > ERROR_EXCERPT_CHARS:
            excerpt = _trim_partial_secret(excerpt[:ERROR_EXCERPT_CHARS], variants) + "…"
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        raise _Failure(
            ErrorType.UPSTREAM,
            f"upstream returned HTTP {status}{reason}: {excerpt}",
            retryable=status in RETRYABLE_STATUSES,
            upstream_status=status,
            output=output,
        )
