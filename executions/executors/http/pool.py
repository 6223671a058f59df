"""The HTTP executor's transport: httpx's requests over httpcore pools pinned to the
addresses the egress guard checked for each call.

The executor keeps httpx's requests, responses, URLs and content decoding; HTTP/1.1
itself (framing, chunked bodies, keep-alive, interim answers) is httpcore's and
h11's. What ToolHub adds around them (decision 0003):

- Every call is checked by the egress guard (``egress.check_host``) and sent
  through the pool of the address set it returned, whose ``PinnedBackend``
  connects only to those addresses: a kept-alive connection is reused only while
  the check of *this* call still returns the addresses it was opened to.
- The method, target and headers are checked before anything is connected
  (HTTP tokens, no CR, LF or NUL; a bad value is never quoted: it may be a
  credential).
- A kept connection found dead before any byte of an answer is replaced once, on
  a connection opened for the resend: at once when the request could not be
  written, and for idempotent methods also when the server hung up without
  answering. httpcore itself drops a kept connection the server closed while it
  was idle (its socket is readable) before using it.
- Pools of address sets no call has used for ``keepalive_expiry`` seconds are
  closed (a sweep), not left open until a call to them comes along.
- A 101 answer (a protocol switch nobody asked for) is refused. Interim answers
  (100, 102, 103) are read and skipped by h11, as RFC 9110 section 15.2 asks of
  a client: the answer returned is always the final one.
"""

from __future__ import annotations

import re
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpcore
import httpx

from executions import egress
from executions.executors.http.pinned import Attempt, PinnedBackend
from executions.executors.http.values import HEADER_NAME, IDEMPOTENT_METHODS

KEEPALIVE_EXPIRY = 5.0
IDLE_PER_POOL = 16
_MESSAGE_CHARS = 200

_TOKEN = re.compile(HEADER_NAME.pattern.encode("ascii"))
_UNSAFE_VALUE = re.compile(rb"[\r\n\x00]")
_UNSAFE_TARGET = re.compile(rb"[\x00-\x20\x7f]")

# httpcore's exceptions as httpx's (the same names), most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
_CORE_ERRORS = tuple(core for core, _ in _ERRORS)


def _as_httpx(exc: Exception, prefix: str = "") -> httpx.TransportError:
    text = (str(exc) or type(exc).__name__)[:_MESSAGE_CHARS]
    for core, ours in _ERRORS:
        if isinstance(exc, core):
            return ours(prefix + text)
    return httpx.TransportError(prefix + text)  # pragma: no cover - all are listed


def check_request(method: str, target: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Refuse what would change the request's framing, before anything is connected."""
    if not _TOKEN.match(method.encode("ascii", "replace")):
        raise httpx.LocalProtocolError(f"invalid HTTP method {method!r}")
    if not target or _UNSAFE_TARGET.search(target):
        raise httpx.LocalProtocolError("the request target contains a space or control character")
    for name, value in headers:
        if not _TOKEN.match(name):
            raise httpx.LocalProtocolError(f"invalid header name {name!r}")
        if _UNSAFE_VALUE.search(value):
            # The value is not quoted: it may be a credential.
            raise httpx.LocalProtocolError(
                f"the value of header {name.decode('latin-1')!r} contains a line break or NUL"
            )


@dataclass(eq=False)
class _Pool:
    """The connections to one set of checked addresses."""

    pool: httpcore.ConnectionPool
    backend: PinnedBackend
    in_flight: int = 0
    used_at: float = 0.0


class PinnedTransport(httpx.BaseTransport):
    """Sends each request through httpcore to the addresses the egress guard checked."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        idle_per_pool: int = IDLE_PER_POOL,
    ) -> None:
        self._ssl_context = ssl_context or httpx.create_ssl_context()
        self._keepalive_expiry = keepalive_expiry
        self._idle_per_pool = idle_per_pool
        self._pools: dict[tuple[str, ...], _Pool] = {}
        self._lock = threading.Lock()
        self._swept_at = time.monotonic()

    # ----------------------------------------------------------------- the pools

    def _take(self, addresses: tuple[str, ...]) -> _Pool:
        now = time.monotonic()
        with self._lock:
            entry = self._pools.get(addresses)
            if entry is None:
                backend = PinnedBackend(addresses)
                entry = self._pools[addresses] = _Pool(
                    pool=httpcore.ConnectionPool(
                        ssl_context=self._ssl_context,
                        max_connections=None,
                        max_keepalive_connections=self._idle_per_pool,
                        keepalive_expiry=self._keepalive_expiry,
                        network_backend=backend,
                    ),
                    backend=backend,
                )
            entry.in_flight += 1
            entry.used_at = now
            swept = self._sweep(now)
        for pool in swept:
            pool.close()
        return entry

    def _sweep(self, now: float) -> list[httpcore.ConnectionPool]:
        """Take out the pools of address sets no call used for ``keepalive_expiry``
        (the egress check no longer returns them, or nobody calls them any more)."""
        if now - self._swept_at <= self._keepalive_expiry:
            return []
        self._swept_at = now
        stale = [
            addresses
            for addresses, entry in self._pools.items()
            if entry.in_flight == 0 and now - entry.used_at >= self._keepalive_expiry
        ]
        return [self._pools.pop(addresses).pool for addresses in stale]

    def _give_back(self, entry: _Pool) -> None:
        with self._lock:
            entry.in_flight -= 1
            entry.used_at = time.monotonic()

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for entry in pools:
            entry.pool.close()

    # ----------------------------------------------------------------- one request

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        check_request(request.method, url.raw_path, request.headers.raw)
        host = url.raw_host.decode("ascii")
        egress.check_scheme(url.scheme, host)
        destination = egress.check_host(host, url.port or egress.DEFAULT_PORTS[url.scheme])
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.read(),  # bytes: a resend sends them again
            # Only the timeouts: no other httpcore extension (``sni_hostname``...) rides along.
            extensions={"timeout": request.extensions.get("timeout", {})},
        )
        entry = self._take(destination.addresses)
        try:
            response, resent_on = self._send(entry, core)
        except BaseException:
            self._give_back(entry)
            raise
        stream = _ResponseStream(self, entry, response, resent_on)
        if response.status < 200:
            stream.close()
            raise httpx.RemoteProtocolError(f"interim response {response.status} is not supported")
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=stream,
            extensions={
                key: response.extensions[key]
                for key in ("http_version", "reason_phrase")
                if key in response.extensions
            },
            request=request,
        )

    def _send(
        self, entry: _Pool, core: httpcore.Request
    ) -> tuple[httpcore.Response, httpcore.HTTPConnection | None]:
        """The answer's head, and the connection opened for a resend (closed with the answer)."""
        with Attempt() as attempt:
            try:
                return entry.pool.handle_request(core), None
            except (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError) as exc:
                stale = not attempt.opened and not attempt.answered
                if not (stale and (attempt.unsent or core.method.decode() in IDEMPOTENT_METHODS)):
                    raise _failed(exc, attempt) from None
            except _CORE_ERRORS as exc:
                raise _as_httpx(exc) from None
        # A kept connection was dead before any byte of an answer: resend once, on a
        # connection opened for it (another kept one could be just as dead).
        connection = httpcore.HTTPConnection(
            origin=core.url.origin,
            ssl_context=self._ssl_context,
            network_backend=entry.backend,
        )
        with Attempt() as attempt:
            try:
                return connection.handle_request(core), connection
            except _CORE_ERRORS as exc:
                connection.close()
                raise _failed(exc, attempt) from None
            except BaseException:
                connection.close()
                raise


def _failed(exc: Exception, attempt: Attempt) -> httpx.TransportError:
    if isinstance(exc, httpcore.RemoteProtocolError) and not attempt.answered:
        return httpx.RemoteProtocolError("the server closed the connection without answering")
    if isinstance(exc, httpcore.RemoteProtocolError):
        return _as_httpx(exc, "invalid response: ")
    return _as_httpx(exc)


class _ResponseStream(httpx.SyncByteStream):
    """The body as it arrives; httpcore keeps the connection once it is all read."""

    def __init__(self, transport, entry, response, connection) -> None:
        self._transport: PinnedTransport = transport
        self._entry: _Pool | None = entry
        self._response: httpcore.Response = response
        self._connection: httpcore.HTTPConnection | None = connection

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._response.iter_stream()
        except httpcore.TimeoutException:
            raise httpx.ReadTimeout("the upstream stopped sending the body in time") from None
        except httpcore.RemoteProtocolError as exc:
            raise _as_httpx(exc, "could not read the whole body: ") from None
        except _CORE_ERRORS as exc:
            raise _as_httpx(exc) from None

    def close(self) -> None:
        entry, self._entry = self._entry, None
        if entry is None:
            return
        try:
            # Closed before its end, httpcore closes the connection; read to its end
            # and not told to close, it keeps it for the next request.
            self._response.close()
        finally:
            if self._connection is not None:
                self._connection.close()
            self._transport._give_back(entry)
