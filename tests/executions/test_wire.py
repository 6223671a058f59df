"""The HTTP executor's wire: keep-alive reuse, dead connections, and what is never sent.

A raw socket server on 127.0.0.1 answers as each test scripts it, so the cases
a well-behaved server never produces (hanging up between requests, closing
without an answer, interim answers) are exercised for real.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from executions import egress
from executions.executors.wire import PinnedTransport


class ScriptedServer:
    """Accepts connections; ``answer(request_bytes, n_on_connection)`` returns bytes or None (hang up)."""

    def __init__(self, answer: Callable[[bytes, int], bytes | None]) -> None:
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests: list[bytes] = []
        self._threads: list[threading.Thread] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        buffer, count = b"", 0
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                self.requests.append(head + b"\r\n\r\n" + body)
                count += 1
                reply = self.answer(head, count)
                if reply is None:
                    return
                conn.sendall(reply)
                if b"\r\nConnection: close\r\n" in reply:
                    return

    def close(self) -> None:
        self._stop = True
        self.sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def ok(body: bytes = b'{"ok":true}', *extra: bytes) -> bytes:
    headers = b"".join(h + b"\r\n" for h in extra)
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
        % (len(body), headers, body)
    )


@pytest.fixture
def scripted(settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    servers: list[ScriptedServer] = []

    def start(answer) -> ScriptedServer:
        server = ScriptedServer(answer)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def client():
    transport = PinnedTransport()
    with httpx.Client(transport=transport, timeout=5) as c:
        yield c


def test_keep_alive_reuses_one_connection(scripted, client):
    server = scripted(lambda head, n: ok())
    for _ in range(3):
        assert client.get(server.url + "/a").json() == {"ok": True}
    assert server.connections == 1
    assert len(server.requests) == 3


def test_chunked_and_close_delimited_bodies(scripted, client):
    def answer(head, n):
        if b"/chunked" in head:
            return (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
        return b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"

    server = scripted(answer)
    assert client.get(server.url + "/chunked").text == "hello world"
    assert client.get(server.url + "/chunked").text == "hello world"
    assert server.connections == 1  # chunked bodies keep the connection
    assert client.get(server.url + "/close").text == "until the end"
    assert client.get(server.url + "/chunked").text == "hello world"
    assert server.connections == 2  # "Connection: close" is honoured


def test_a_connection_the_server_closed_while_idle_is_not_used(scripted, client):
    server = scripted(lambda head, n: ok() if n == 1 else None)  # one answer per connection
    assert client.get(server.url + "/a").status_code == 200
    # The server hangs up after the first answer; the next call must not fail.
    for _ in range(3):
        assert client.get(server.url + "/a").status_code == 200
    assert server.connections == 4


def test_a_dead_reused_connection_is_retried_once_for_get_only(scripted):
    # The server reads the second request of a connection, then hangs up without answering.
    server = scripted(lambda head, n: ok() if n == 1 else None)
    transport = PinnedTransport()
    with httpx.Client(transport=transport, timeout=5) as c:
        assert c.get(server.url + "/a").status_code == 200
        # Make the idle check miss the hang-up, as when it happens just after the check.
        transport_connection = next(iter(transport._idle.values()))[0]
        transport_connection.closed_by_peer = lambda: False
        assert c.get(server.url + "/b").status_code == 200  # resent once on a new connection
        assert [r.split(b" ")[1] for r in server.requests] == [b"/a", b"/b", b"/b"]

        assert c.get(server.url + "/c").status_code == 200  # a fresh connection again
        next(iter(transport._idle.values()))[0].closed_by_peer = lambda: False
        before = len(server.requests)
        with pytest.raises(httpx.RemoteProtocolError, match="without answering"):
            c.post(server.url + "/d", content=b"x")
        # A POST the server may have acted on is never sent twice.
        assert len(server.requests) == before + 1


def test_a_pooled_connection_is_used_only_for_addresses_checked_now(scripted, client, monkeypatch):
    server = scripted(lambda head, n: ok())
    assert client.get(server.url + "/a").status_code == 200
    real = egress.check_host

    def moved(host, port):
        checked = real(host, port)
        return egress.Destination(
            host=checked.host, port=checked.port, addresses=("127.0.0.2",), allowed_by="network"
        )

    monkeypatch.setattr(egress, "check_host", moved)
    # The kept connection leads to 127.0.0.1, no longer a checked address: a new
    # connection to 127.0.0.2 is opened instead (nothing listens there).
    with pytest.raises(httpx.ConnectError):
        client.get(server.url + "/b")
    assert len(server.requests) == 1


def test_a_partly_read_body_closes_the_connection(scripted, client):
    server = scripted(lambda head, n: ok(b"x" * 100_000))
    with client.stream("GET", server.url + "/big") as response:
        next(response.iter_raw(1024))
    assert client.get(server.url + "/big").status_code == 200
    assert server.connections == 2


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Injected": "a\r\nX-Evil: 1"},
        {"X-Nul": "a\x00b"},
        {"Bad Name": "v"},
    ],
)
def test_header_injection_is_refused_before_anything_is_sent(scripted, client, headers):
    server = scripted(lambda head, n: ok())
    with pytest.raises((httpx.LocalProtocolError, httpx.InvalidURL, ValueError)):
        client.get(server.url + "/a", headers=headers)
    assert server.requests == []


def test_an_interim_answer_is_refused_clearly(scripted, client):
    server = scripted(lambda head, n: b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok())
    with pytest.raises(httpx.RemoteProtocolError, match="interim response 103"):
        client.get(server.url + "/a")


def test_100_continue_is_skipped(scripted, client):
    server = scripted(lambda head, n: b"HTTP/1.1 100 Continue\r\n\r\n" + ok())
    assert client.get(server.url + "/a").json() == {"ok": True}


def test_a_truncated_body_is_a_protocol_error(scripted, client):
    server = scripted(
        lambda head, n: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort"
    )
    with pytest.raises(httpx.RemoteProtocolError, match="whole body"):
        client.get(server.url + "/a")
    assert server.connections == 1


def test_latin1_header_values_survive(scripted, client):
    server = scripted(lambda head, n: ok(b"{}", b"X-Name: caf\xe9"))
    response = client.get(server.url + "/a")
    assert response.headers.raw[-1] == (b"X-Name", b"caf\xe9")


def test_head_and_no_content_keep_the_connection(scripted, client):
    def answer(head, n):
        if head.startswith(b"HEAD"):
            return b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n"
        return b"HTTP/1.1 204 No Content\r\n\r\n"

    server = scripted(answer)
    assert client.head(server.url + "/a").status_code == 200
    assert client.delete(server.url + "/a").status_code == 204
    assert client.head(server.url + "/a").status_code == 200
    assert server.connections == 1


def test_idle_connections_of_other_origins_are_closed_once_expired(scripted):
    first = scripted(lambda head, n: ok())
    second = scripted(lambda head, n: ok())
    transport = PinnedTransport(keepalive_expiry=0.2)
    with httpx.Client(transport=transport, timeout=5) as c:
        assert c.get(first.url + "/a").status_code == 200
        kept = next(iter(transport._idle.values()))[0]
        time.sleep(0.3)
        assert c.get(second.url + "/a").status_code == 200  # its check-in sweeps the pool
        assert kept.sock.fileno() == -1  # closed
        assert len(transport._idle) == 1
