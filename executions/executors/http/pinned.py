"""httpcore's network-backend seam, pinned: connections only to the addresses the egress
guard returned for the call, and a record of what each request did on the wire.

``PinnedBackend.connect_tcp`` never resolves the name it is given: it connects to
the checked addresses, in order. TLS is started by httpcore on the stream it
returns, with the URL's host name (sent as SNI and verified against the
certificate). Every stream it returns is a ``_WatchedStream``, which notes in the
calling thread's ``Attempt`` (httpcore's synchronous pool does a request's I/O in
the thread that sent it) whether a connection was opened, whether a write failed
and whether any byte of an answer arrived: what the resend-once rule needs. Inside
``cancellable(cancellation)``, a cancelled call's blocked read or write ends at once:
the cancelling thread shuts the socket down.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpcore

_current = threading.local()


@dataclass
class Attempt:
    """One request on the wire, as its network stream saw it."""

    opened: bool = False  # a new connection was opened for it (so none was reused)
    unsent: bool = False  # a write failed: the request did not leave whole
    answered: bool = False  # at least one byte of an answer arrived

    def __enter__(self) -> Attempt:
        _current.attempt = self
        return self

    def __exit__(self, *_: object) -> None:
        _current.attempt = None


def _attempt() -> Attempt | None:
    return getattr(_current, "attempt", None)


@contextmanager
def cancellable(cancellation) -> Iterator[None]:
    """This thread's requests stop when ``cancellation`` (``executors.base.Cancellation``)
    is set: a read or write waiting on the wire fails as the connection drops."""
    _current.cancellation = cancellation
    try:
        yield
    finally:
        _current.cancellation = None


class _WatchedStream(httpcore.NetworkStream):
    """A network stream that reports writes and reads to the current attempt."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._stopping(lambda: self._stream.read(max_bytes, timeout), httpcore.ReadError)
        attempt = _attempt()
        if data and attempt is not None:
            attempt.answered = True
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._stopping(lambda: self._stream.write(buffer, timeout), httpcore.WriteError)
        except httpcore.WriteError:
            attempt = _attempt()
            if attempt is not None:
                attempt.unsent = True
            raise

    def _stopping(self, io, error: type[Exception]):
        """``io()``, ended by the call's cancellation (its socket shut down meanwhile)."""
        cancellation = getattr(_current, "cancellation", None)
        if cancellation is None:
            return io()
        if cancellation.is_set:
            raise error("the call was cancelled")
        forget = cancellation.on_cancel(self._shut_down)
        try:
            return io()
        finally:
            forget()

    def _shut_down(self) -> None:
        sock = self._stream.get_extra_info("socket")
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> _WatchedStream:
        return _WatchedStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class PinnedBackend(httpcore.NetworkBackend):
    """Connects only to ``addresses`` (checked by the egress guard); the host name
    httpcore passes is never resolved."""

    def __init__(self, addresses: tuple[str, ...]) -> None:
        self.addresses = addresses
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        attempt = _attempt()
        if attempt is not None:
            attempt.opened = True
        error: Exception = httpcore.ConnectError(f"no checked address for {host}")
        for address in self.addresses:
            try:
                stream = self._backend.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectTimeout as exc:
                error = httpcore.ConnectTimeout(f"connecting to {address}:{port} timed out")
                error.__cause__ = exc
            except httpcore.ConnectError as exc:
                error = httpcore.ConnectError(f"{exc} ({address}:{port})")
            else:
                return _WatchedStream(stream)
        raise error

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise httpcore.ConnectError("a unix socket is not an egress destination")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)
