"""The HTTP executor's transport (httpcore pools pinned to the checked addresses):
keep-alive reuse, dead connections, and what is never sent.

A raw socket server on 127.0.0.1 answers as each test scripts it, so the cases
a well-behaved server never produces (hanging up between requests, closing
without an answer, interim answers) are exercised for real.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from executions import egress
from executions.executors.http.pool import PinnedTransport


class ScriptedServer:
    """Accepts connections; ``answer(request_bytes, n_on_connection)`` returns bytes or None (hang up)."""

    def __init__(
        self, answer: Callable[[bytes, int], bytes | None], host: str = "127.0.0.1"
    ) -> None:
        self.answer = answer
        self.host = host
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.hangups = 0  # connections the client closed
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
                        self.hangups += 1
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
        return f"http://{self.host}:{self.port}"


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

    def start(answer, host: str = "127.0.0.1") -> ScriptedServer:
        server = ScriptedServer(answer, host)
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


def test_chunked_bodies_keep_the_connection_and_connection_close_is_honoured(scripted, client):
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
    # The kept connection is alive (not readable) when it is taken from the pool: the
    # server hangs up only once it has read the request.
    transport = PinnedTransport()
    with httpx.Client(transport=transport, timeout=5) as c:
        assert c.get(server.url + "/a").status_code == 200
        assert c.get(server.url + "/b").status_code == 200  # resent once on a new connection
        assert [r.split(b" ")[1] for r in server.requests] == [b"/a", b"/b", b"/b"]
        assert server.connections == 2

        assert c.get(server.url + "/c").status_code == 200  # a fresh connection again
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


@pytest.mark.parametrize("interim", [b"102 Processing", b"103 Early Hints"])
def test_an_interim_answer_is_never_taken_for_the_answer(scripted, client, interim):
    # RFC 9110 15.2: a client must parse 1xx answers it did not expect and go on to the final one.
    server = scripted(lambda head, n: b"HTTP/1.1 %s\r\nLink: </a>\r\n\r\n" % interim + ok())
    for _ in range(2):
        response = client.get(server.url + "/a")
        assert response.status_code == 200
        assert response.content == b'{"ok":true}'
        assert "link" not in response.headers
    assert server.connections == 1  # the framing held: the connection was kept


def test_a_protocol_switch_nobody_asked_for_is_refused_clearly(scripted, client):
    server = scripted(
        lambda head, n: (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n"
            b"Connection: Upgrade\r\n\r\n" + ok()
        )
    )
    # h11 refuses the switch (no upgrade was proposed); nothing after it is read as an answer.
    with pytest.raises(httpx.RemoteProtocolError, match="invalid response"):
        client.get(server.url + "/a")
    with pytest.raises(httpx.RemoteProtocolError, match="invalid response"):
        client.get(server.url + "/a")
    assert server.connections == 2  # the refused connection is never reused


def test_a_100_continue_before_the_answer_is_skipped(scripted, client):
    server = scripted(lambda head, n: b"HTTP/1.1 100 Continue\r\n\r\n" + ok())
    assert client.get(server.url + "/a").json() == {"ok": True}


def test_a_truncated_body_is_a_protocol_error(scripted, client):
    server = scripted(
        lambda head, n: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort"
    )
    with pytest.raises(httpx.RemoteProtocolError, match="whole body"):
        client.get(server.url + "/a")
    assert server.connections == 1


def test_latin1_header_values_reach_the_response_unchanged(scripted, client):
    server = scripted(lambda head, n: ok(b"{}", b"X-Name: caf\xe9"))
    response = client.get(server.url + "/a")
    assert response.headers.raw[-1] == (b"X-Name", b"caf\xe9")


def test_head_and_no_content_answers_keep_the_connection(scripted, client):
    def answer(head, n):
        if head.startswith(b"HEAD"):
            return b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n"
        return b"HTTP/1.1 204 No Content\r\n\r\n"

    server = scripted(answer)
    assert client.head(server.url + "/a").status_code == 200
    assert client.delete(server.url + "/a").status_code == 204
    assert client.head(server.url + "/a").status_code == 200
    assert server.connections == 1


def test_the_pool_of_an_address_set_no_call_uses_any_more_is_closed(scripted, settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.0/8"]
    first = scripted(lambda head, n: ok())
    second = scripted(lambda head, n: ok(), host="127.0.0.2")
    transport = PinnedTransport(keepalive_expiry=0.2)
    with httpx.Client(transport=transport, timeout=5) as c:
        assert c.get(first.url + "/a").status_code == 200
        time.sleep(0.3)
        assert first.hangups == 0  # kept alive until something sweeps
        assert c.get(second.url + "/a").status_code == 200  # its call sweeps the pools
        deadline = time.monotonic() + 2
        while first.hangups == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first.hangups == 1  # closed, not left open until 127.0.0.1 is called again
        assert second.hangups == 0  # the pool in use is kept
        assert c.get(first.url + "/a").status_code == 200
        assert first.connections == 2


def test_a_refused_header_value_is_never_quoted_in_the_error(scripted, client):
    # h11 would refuse it too, but quoting it: the value may be a credential.
    server = scripted(lambda head, n: ok())
    with pytest.raises(httpx.LocalProtocolError) as info:
        client.get(server.url + "/a", headers={"Authorization": "Bearer sk-live-42\r\nX: 1"})
    assert "sk-live-42" not in str(info.value)
    assert "Authorization" in str(info.value)
    assert server.requests == []


class TLSServer:
    """One TLS listener on 127.0.0.1 with a certificate for ``name``; records the SNI sent."""

    def __init__(self, directory, name: str) -> None:
        self.cert, key = directory / f"{name}.pem", directory / f"{name}.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", str(key), "-out", str(self.cert), "-days", "1",
             "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"],
            check=True, capture_output=True,
        )  # fmt: skip
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(self.cert, key)
        self.server_names: list[str | None] = []
        self.context.sni_callback = lambda sock, server_name, ctx: self.server_names.append(
            server_name
        )
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    while b"\r\n\r\n" not in tls.recv(65536):
                        pass
                    tls.sendall(ok(b'{"tls":true}', b"Connection: close"))
            except ssl.SSLError:
                continue
            except OSError:
                return


@pytest.fixture
def resolved_once(settings, monkeypatch):
    """``upstream.test`` resolves to 127.0.0.1 (allowed); every lookup of it is counted."""
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    real, lookups = socket.getaddrinfo, []

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "upstream.test":
            lookups.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


def test_tls_goes_to_the_checked_address_and_still_sends_and_verifies_the_name(
    tmp_path, resolved_once
):
    server = TLSServer(tmp_path, "upstream.test")
    wrong = TLSServer(tmp_path, "other.test")
    trusted = ssl.create_default_context(cafile=server.cert)
    trusted.load_verify_locations(wrong.cert)
    try:
        with httpx.Client(transport=PinnedTransport(ssl_context=trusted), timeout=5) as c:
            response = c.get(f"https://upstream.test:{server.port}/a")
            assert response.json() == {"tls": True}
            assert server.server_names == ["upstream.test"]  # SNI: the name, not the address
            assert resolved_once == ["upstream.test"]  # resolved by the egress check only
            # A trusted certificate for another name is refused.
            with pytest.raises(httpx.ConnectError, match=r"(?i)certificate|hostname"):
                c.get(f"https://upstream.test:{wrong.port}/a")
            assert wrong.server_names == ["upstream.test"]
    finally:
        server.sock.close()
        wrong.sock.close()
