"""Sending a prepared request, following redirects, each hop checked by the egress guard."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from executions import egress
from executions.executors.base import ErrorType
from executions.executors.http.request import _Prepared
from executions.executors.http.response import read_body
from executions.executors.http.transport import (
    _with_defaults,
    _with_url_credentials,
    sending_transport,
)
from executions.executors.http.values import (
    _REDIRECT_DRAIN_BYTES,
    _URL_METADATA_CHARS,
    MAX_REDIRECTS,
    REDIRECT_STATUSES,
    _Failure,
    _timeout_failure,
)


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    scheme = url.scheme.lower()
    return (
        scheme,
        url.raw_host.decode("ascii").lower(),
        url.port or egress.DEFAULT_PORTS.get(scheme, 0),
    )


@dataclass
class _Hop:
    """What the next request of a call sends; a redirect may change each part."""

    method: str
    url: httpx.URL
    content: bytes | None
    headers: list[tuple[str, str]]
    origin: tuple[str, str, int]


def send(prepared: _Prepared, metadata: dict[str, Any]) -> tuple[httpx.Response, bytes, bool]:
    """The final response of the call with its body (at most the limit) and whether it was cut."""
    transport = sending_transport()
    deadline = time.monotonic() + prepared.timeout
    hop = _Hop(
        prepared.method,
        prepared.url,
        prepared.content,
        list(prepared.headers),
        _origin(prepared.url),
    )
    metadata["redirects"] = 0
    for number in range(MAX_REDIRECTS + 1):
        _check_host_name(hop.url, number)
        metadata["url"] = str(hop.url.copy_with(userinfo=b""))[:_URL_METADATA_CHARS]
        response = _open(transport, hop, number, prepared.timeout, deadline)
        try:
            if not _is_redirect(response):
                body, truncated = read_body(response, prepared, deadline)
                return response, body, truncated
            hop = _follow(response, hop, number, prepared, deadline)
            metadata["redirects"] = number + 1
        except httpx.TimeoutException:
            raise _timeout_failure(prepared.timeout) from None
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


def _check_host_name(url: httpx.URL, number: int) -> None:
    try:
        url.host  # noqa: B018 - httpx decodes it to build the request
    except UnicodeError as exc:  # idna.IDNAError: an invalid A-label
        where = "the URL" if number == 0 else "the redirect"
        raise _Failure(
            ErrorType.CONFIG if number == 0 else ErrorType.UPSTREAM,
            f"{where} has an invalid host name ({exc})",
        ) from None


def _open(
    transport: httpx.BaseTransport, hop: _Hop, number: int, timeout: float, deadline: float
) -> httpx.Response:
    """Send one request; the response's head is read, its body not yet."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _timeout_failure(timeout)
    url = hop.url
    request = httpx.Request(
        hop.method,
        url,
        headers=_with_defaults(_with_url_credentials(url, hop.headers)),
        content=hop.content,
        extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), remaining)},
    )
    try:
        return transport.handle_request(request)
    except egress.EgressDenied as exc:
        prefix = f"redirect {number} to {url} " if number else ""
        raise _Failure(ErrorType.EGRESS_DENIED, f"{prefix}{exc}") from None
    except egress.HostResolutionError as exc:
        raise _Failure(ErrorType.CONNECTION, str(exc), retryable=True) from None
    except httpx.TimeoutException:
        raise _timeout_failure(timeout) from None
    except httpx.LocalProtocolError as exc:
        raise _Failure(ErrorType.CONFIG, f"could not send the request: {exc}") from None
    except httpx.TransportError as exc:
        raise _Failure(
            ErrorType.CONNECTION,
            f"connection to {url.raw_host.decode('ascii', 'replace')}:"
            f"{url.port or hop.origin[2]} failed: {exc or type(exc).__name__}",
            retryable=True,
        ) from None


def _is_redirect(response: httpx.Response) -> bool:
    return response.status_code in REDIRECT_STATUSES and bool(response.headers.get("location"))


def _follow(
    response: httpx.Response, hop: _Hop, number: int, prepared: _Prepared, deadline: float
) -> _Hop:
    """The request a redirect asks for: method and body per its status, credentials kept
    only on the same origin."""
    status = response.status_code
    if number == MAX_REDIRECTS:
        raise _Failure(
            ErrorType.UPSTREAM,
            f"too many redirects (more than {MAX_REDIRECTS})",
            upstream_status=status,
        )
    _drain(response, deadline)
    try:
        next_url = response.url.join(response.headers["location"].strip())
    except httpx.InvalidURL:
        raise _Failure(
            ErrorType.UPSTREAM,
            f"HTTP {status} redirect to an invalid location",
            upstream_status=status,
        ) from None
    next_url = next_url.copy_with(fragment=None)
    method, content, headers, origin = hop.method, hop.content, hop.headers, hop.origin
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, content = "GET", None
        headers = [
            (n, v) for n, v in headers if n.lower() not in ("content-type", "content-length")
        ]
    if _origin(next_url) != origin:
        headers = [(n, v) for n, v in headers if n.lower() not in prepared.sensitive_headers]
        origin = _origin(next_url)
    return _Hop(method, next_url, content, headers, origin)


def _drain(response: httpx.Response, deadline: float) -> None:
    """Read a little of a redirect's body so its connection can go back to the pool."""
    read = 0
    for chunk in response.iter_raw():
        read += len(chunk)
        if read > _REDIRECT_DRAIN_BYTES or time.monotonic() > deadline:
            break
