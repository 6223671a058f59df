"""A fast HTTP/1.1 upstream on 127.0.0.1 for the benchmarks.

``GET /ping?x=<int>`` answers ``{"ok":true,"x":<int>}`` (JSON, keep-alive).
Anything else is 404; a ``x`` that is not digits is 400. Pipelined requests
are answered in order. One asyncio process per ``--procs`` (SO_REUSEPORT), so
it answers well above 10k requests/s and is never the bottleneck.

    python bench/upstream.py --port 18080 [--procs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys

_OK = b"200 OK"
_JSON = b"application/json"


def _response(status: bytes, body: bytes, close: bool) -> bytes:
    return b"".join(
        (
            b"HTTP/1.1 ",
            status,
            b"\r\nContent-Type: ",
            _JSON,
            b"\r\nContent-Length: ",
            str(len(body)).encode(),
            b"\r\nConnection: close\r\n\r\n" if close else b"\r\n\r\n",
            body,
        )
    )


def _answer(target: bytes) -> tuple[bytes, bytes]:
    path, _, query = target.partition(b"?")
    if path != b"/ping":
        return b"404 Not Found", b'{"ok":false,"error":"not found"}'
    x = b"0"
    for pair in query.split(b"&"):
        if pair.startswith(b"x="):
            x = pair[2:]
            break
    if not x.isdigit() or len(x) > 18:
        return b"400 Bad Request", b'{"ok":false,"error":"x must be a non-negative integer"}'
    return _OK, b'{"ok":true,"x":' + x + b"}"


class PingProtocol(asyncio.Protocol):
    __slots__ = ("buffer", "transport")

    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        out: list[bytes] = []
        close = False
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buffer[:end]
            lower = head.lower()
            length = 0
            at = lower.find(b"\r\ncontent-length:")
            if at >= 0:
                stop = lower.find(b"\r\n", at + 2)
                raw = lower[at + 17 : stop if stop >= 0 else len(lower)].strip()
                length = int(raw) if raw.isdigit() else 0
            total = end + 4 + length
            if len(buffer) < total:
                break
            buffer = buffer[total:]
            line = head.split(b"\r\n", 1)[0].split(b" ")
            target = line[1] if len(line) > 1 else b"/"
            close = b"\r\nconnection: close" in lower
            status, body = _answer(target)
            out.append(_response(status, body, close))
            if close:
                break
        self.buffer = b"" if close else buffer
        if out:
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
        if close:
            self.transport.close()


def _serve(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    sock.setblocking(False)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
        server = await loop.create_server(PingProtocol, sock=sock, backlog=2048)
        async with server:
            await stop

    asyncio.run(main())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--procs", type=int, default=1)
    args = parser.parse_args(argv)
    children = []
    for _ in range(max(0, args.procs - 1)):
        pid = os.fork()
        if pid == 0:
            _serve(args.port)
            os._exit(0)
        children.append(pid)
    try:
        _serve(args.port)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    sys.exit(0)


if __name__ == "__main__":
    main()
