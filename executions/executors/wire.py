"""HTTP/1.1 on the standard library, for the HTTP executor: a pinned keep-alive pool.

An httpx transport: the executor keeps httpx's requests, responses, URLs and
content decoding, and only the wire changes. The request head is written here
(checked: token method and header names, no CR, LF or NUL anywhere) and the
response is parsed by ``http.client``; with httpcore and h11 the same call cost
0.44 ms of CPU against 0.16 ms here (loopback, ``bench/README.md``).

Every connection goes to an address the egress guard checked for this very
call (``egress.check_host``), never to a name resolved again. A kept-alive
connection is reused only for the same scheme, host and port, only when its
peer address is among those checked now, only while idle for less than
``KEEPALIVE_EXPIRY`` seconds, and only when the server has not closed it
meanwhile (its socket would be readable). A reused connection that turns out
dead before any byte of an answer arrives is replaced once: at once when the
request could not be sent, and for idempotent methods also when the server
hung up without answering.
"""

from __future__ import annotations

import http.client
import re
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from executions import egress

KEEPALIVE_EXPIRY = 5.0
IDLE_PER_ORIGIN = 16
READ_CHUNK = 64 * 1024
# Methods a server may receive twice without harm: the executor retries only
# these, and the pool resends only these after a hang-up.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

# An HTTP token (RFC 9110): what a method or a header name may be made of.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_TOKEN = re.compile(HEADER_NAME.pattern.encode("ascii"))
_UNSAFE_VALUE = re.compile(rb"[\r\n\x00]")
_UNSAFE_TARGET = re.compile(r"[\x00-\x20\x7f]")


@dataclass(eq=False)
class _Connection:
    sock: socket.socket
    peer: str
    idle_since: float = 0.0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def closed_by_peer(self) -> bool:
        """Readable while idle means the server closed it (or sent what nobody asked for)."""
        poller = select.poll()
        try:
            poller.register(self.sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        except (OSError, ValueError):
            return True
        return bool(poller.poll(0))


class _Stale(Exception):
    """A reused connection was found dead before any byte of the answer."""

    def __init__(self, error: httpx.TransportError, *, sent: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.sent = sent


def _request_head(method: str, target: str, headers) -> bytes:
    if not _TOKEN.match(method.encode("ascii", "replace")):
        raise httpx.LocalProtocolError(f"invalid HTTP method {method!r}")
    if not target or _UNSAFE_TARGET.search(target):
        raise httpx.LocalProtocolError("the request target contains a space or control character")
    lines = [f"{method} {target} HTTP/1.1\r\n".encode("ascii")]
    for name, value in headers:
        if not _TOKEN.match(name):
            raise httpx.LocalProtocolError(f"invalid header name {name!r}")
        if _UNSAFE_VALUE.search(value):
            # The value is not quoted: it may be a credential.
            raise httpx.LocalProtocolError(
                f"the value of header {name.decode('latin-1')!r} contains a line break or NUL"
            )
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


def _timeout_of(request: httpx.Request, phase: str) -> float | None:
    return (request.extensions.get("timeout") or {}).get(phase)


class PinnedTransport(httpx.BaseTransport):
    """Sends each request over HTTP/1.1 to the addresses the egress guard checked."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        idle_per_origin: int = IDLE_PER_ORIGIN,
    ) -> None:
        self._ssl_context = ssl_context or httpx.create_ssl_context()
        self._keepalive_expiry = keepalive_expiry
        self._idle_per_origin = idle_per_origin
        self._idle: dict[tuple[str, str, int], deque[_Connection]] = {}
        self._lock = threading.Lock()
        self._swept_at = time.monotonic()

    # ----------------------------------------------------------------- the pool

    def _checkout(self, key: tuple[str, str, int], addresses: tuple[str, ...]):
        now = time.monotonic()
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    self._idle.pop(key, None)
                    return None
                connection = idle.pop()  # the most recently used one
            if (
                now - connection.idle_since < self._keepalive_expiry
                and connection.peer in addresses
                and not connection.closed_by_peer()
            ):
                return connection
            connection.close()

    def _checkin(self, key: tuple[str, str, int], connection: _Connection) -> None:
        now = connection.idle_since = time.monotonic()
        expired: list[_Connection] = []
        with self._lock:
            if now - self._swept_at > self._keepalive_expiry:
                # Connections to origins nobody calls any more are closed here,
                # not left open until a call to their origin comes along.
                self._swept_at = now
                for origin, idle in list(self._idle.items()):
                    while idle and now - idle[0].idle_since >= self._keepalive_expiry:
                        expired.append(idle.popleft())
                    if not idle:
                        del self._idle[origin]
            idle = self._idle.setdefault(key, deque())
            if len(idle) < self._idle_per_origin:
                idle.append(connection)
            else:
                expired.append(connection)
        for old in expired:
            old.close()

    def close(self) -> None:
        with self._lock:
            pools, self._idle = list(self._idle.values()), {}
        for idle in pools:
            for connection in idle:
                connection.close()

    # ----------------------------------------------------------------- one request

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.scheme
        host = url.raw_host.decode("ascii")
        egress.check_scheme(scheme, host)
        port = url.port or egress.DEFAULT_PORTS[scheme]
        destination = egress.check_host(host, port)
        key = (scheme, host, port)
        head = _request_head(request.method, url.raw_path.decode("ascii"), request.headers.raw)
        body = request.read()

        for attempt in (1, 2):
            # A retry after a dead kept connection always opens a new one.
            connection = self._checkout(key, destination.addresses) if attempt == 1 else None
            reused = connection is not None
            if connection is None:
                connection = self._connect(scheme, host, port, destination.addresses, request)
            try:
                response = self._exchange(connection, head, body, request, reused=reused)
            except _Stale as stale:
                connection.close()
                retry = not stale.sent or request.method in IDEMPOTENT_METHODS
                if attempt == 1 and retry:
                    continue
                raise stale.error from None
            except BaseException:
                connection.close()
                raise
            stream = _ResponseStream(self, key, connection, response, request)
            return httpx.Response(
                status_code=response.status,
                headers=[
                    (name.encode("latin-1"), value.encode("latin-1"))
                    for name, value in response.getheaders()
                ],
                stream=stream,
                extensions={
                    "http_version": b"HTTP/1.1" if response.version == 11 else b"HTTP/1.0",
                    "reason_phrase": response.reason.encode("latin-1", "replace"),
                },
                request=request,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _connect(
        self, scheme: str, host: str, port: int, addresses: tuple[str, ...], request
    ) -> _Connection:
        timeout = _timeout_of(request, "connect")
        error: BaseException | None = None
        for address in addresses:
            try:
                sock = socket.create_connection((address, port), timeout=timeout)
            except TimeoutError as exc:
                error = httpx.ConnectTimeout(f"connecting to {address}:{port} timed out")
                error.__cause__ = exc
                continue
            except OSError as exc:
                error = httpx.ConnectError(f"{exc.strerror or exc} ({address}:{port})")
                continue
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if scheme == "https":
                    sock = self._ssl_context.wrap_socket(sock, server_hostname=host)
            except TimeoutError:
                sock.close()
                raise httpx.ConnectTimeout("the TLS handshake timed out") from None
            except (ssl.SSLError, ssl.CertificateError) as exc:
                sock.close()
                raise httpx.ConnectError(f"TLS: {exc}") from None
            except OSError as exc:
                sock.close()
                raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
            return _Connection(sock=sock, peer=address)
        assert error is not None
        raise error

    def _exchange(
        self, connection: _Connection, head: bytes, body: bytes, request, *, reused: bool
    ) -> http.client.HTTPResponse:
        sock = connection.sock
        try:
            sock.settimeout(_timeout_of(request, "write"))
            sock.sendall(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                sock.sendall(body)
        except TimeoutError:
            raise httpx.WriteTimeout("sending the request timed out") from None
        except OSError as exc:
            error = httpx.WriteError(str(exc) or type(exc).__name__)
            if reused:
                raise _Stale(error, sent=False) from None
            raise error from None
        try:
            sock.settimeout(_timeout_of(request, "read"))
            response = http.client.HTTPResponse(sock, method=request.method)
            response.begin()  # skips 100 Continue itself
        except TimeoutError:
            raise httpx.ReadTimeout("the upstream did not answer in time") from None
        except http.client.RemoteDisconnected:
            error = httpx.RemoteProtocolError("the server closed the connection without answering")
            if reused:
                raise _Stale(error, sent=True) from None
            raise error from None
        except http.client.HTTPException as exc:
            raise httpx.RemoteProtocolError(
                f"invalid response: {type(exc).__name__} {str(exc)[:200]}"
            ) from None
        except OSError as exc:
            error = httpx.ReadError(str(exc) or type(exc).__name__)
            if reused and isinstance(exc, ConnectionResetError):
                raise _Stale(error, sent=True) from None
            raise error from None
        if 102 <= response.status < 200:
            # Interim answers (103 Early Hints) are for browsers over HTTP/2; an
            # API that sends one over HTTP/1.1 is refused rather than misread.
            response.close()
            raise httpx.RemoteProtocolError(f"interim response {response.status} is not supported")
        return response


class _ResponseStream(httpx.SyncByteStream):
    """The body as it arrives; the connection goes back to the pool once it is all read."""

    def __init__(self, transport, key, connection, response, request) -> None:
        self._transport = transport
        self._key = key
        self._connection: _Connection | None = connection
        self._response = response
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        response = self._response
        try:
            while True:
                chunk = response.read1(READ_CHUNK)
                if not chunk:
                    if response.length:  # read1 ends quietly where Content-Length was not met
                        raise http.client.IncompleteRead(b"", response.length)
                    return
                yield chunk
        except TimeoutError:
            raise httpx.ReadTimeout("the upstream stopped sending the body in time") from None
        except http.client.IncompleteRead:
            raise httpx.RemoteProtocolError(
                "the server closed the connection before the whole body arrived"
            ) from None
        except http.client.HTTPException as exc:
            raise httpx.RemoteProtocolError(
                f"invalid response body: {type(exc).__name__}"
            ) from None
        except (OSError, ValueError) as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from None

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        response = self._response
        complete = response.isclosed() or (not response.chunked and response.length == 0)
        response.close()  # the response's reader only: the socket stays open
        if complete and not response.will_close:
            # Read to its end and not told to close: good for the next request.
            self._transport._checkin(self._key, connection)
        else:
            connection.close()
