"""The HTTP executor's transport against httpx's own, on one keep-alive connection.

Measures, in one process and alternating rounds, the wall time and the CPU
time per ``GET /ping`` to ``bench/upstream.py``, each an ``httpx.Request`` handed
to the transport's ``handle_request`` (as the HTTP executor does), with:

- ``wire``: ``executions.executors.wire.PinnedTransport`` (the executor's:
  request head written by hand, ``http.client`` parses the answer, egress check
  and address pinning on every call);
- ``httpcore-pinned``: httpx's mapping onto ``httpcore.ConnectionPool``s (one
  per set of checked addresses) whose network backend (httpcore's public
  ``NetworkBackend`` seam) connects only to the addresses the same egress check
  returned for this call (a prototype of the seam, not used by the executor);
- ``httpx``: ``httpx.HTTPTransport()`` as shipped (httpcore and h11, no egress
  check): the floor of the library path.

    .venv/bin/python bench/wire_transports.py [--n 5000] [--rounds 5]

Needs nothing but this checkout: the upstream runs on a free 127.0.0.1 port and
is stopped on exit. Prints a markdown table (median of the rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TIMEOUTS = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
os.environ.setdefault("TOOLHUB_EGRESS_ALLOW", "127.0.0.1/32")

import django  # noqa: E402

django.setup()

import httpcore  # noqa: E402
import httpx  # noqa: E402

from executions import egress  # noqa: E402
from executions.executors.wire import PinnedTransport  # noqa: E402


class PinnedBackend(httpcore.NetworkBackend):
    """httpcore's seam: connects only to the addresses the egress guard returned
    (the name is never resolved again; TLS still verifies and sends the name)."""

    def __init__(self, addresses: tuple[str, ...]) -> None:
        self._addresses = addresses
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        error: Exception = httpcore.ConnectError(f"no checked address for {host}")
        for address in self._addresses:
            try:
                return self._backend.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
        raise error

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise httpcore.ConnectError("unix sockets are not an egress destination")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class HttpcorePinnedTransport(httpx.BaseTransport):
    """httpx's request and response mapped onto httpcore pools, one per set of
    checked addresses (so a kept-alive connection is only reused while the egress
    check of *this* call still returns the addresses it was opened to), each with a
    ``PinnedBackend``: what ``httpx.HTTPTransport`` does, with the backend passed in."""

    def __init__(self) -> None:
        self._ssl_context = httpx.create_ssl_context()
        self._pools: dict[tuple, httpcore.ConnectionPool] = {}

    def _pool(self, addresses: tuple[str, ...]) -> httpcore.ConnectionPool:
        pool = self._pools.get(addresses)
        if pool is None:
            pool = self._pools[addresses] = httpcore.ConnectionPool(
                ssl_context=self._ssl_context,
                keepalive_expiry=5.0,
                network_backend=PinnedBackend(addresses),
            )
        return pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = url.raw_host.decode("ascii")
        egress.check_scheme(url.scheme, host)
        destination = egress.check_host(host, url.port or egress.DEFAULT_PORTS[url.scheme])
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool(destination.addresses).handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Stream(response),
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()


class _Stream(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    def __iter__(self):
        yield from self._response.stream

    def close(self) -> None:
        self._response.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the upstream did not start")


def _measure(transport: httpx.BaseTransport, url: str, n: int) -> tuple[float, float]:
    """Wall and CPU ms per call over ``n`` calls (each answer checked), called as the
    HTTP executor calls its transport: an ``httpx.Request`` to ``handle_request``."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        request = httpx.Request("GET", url, params={"x": i}, extensions={"timeout": TIMEOUTS})
        response = transport.handle_request(request)
        response.read()
        response.close()
        if response.status_code != 200 or json.loads(response.content)["x"] != i:
            raise SystemExit(f"bad answer: {response.status_code} {response.content[:80]!r}")
    return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="calls per transport and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    port = _free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(BENCH / "upstream.py"), "--port", str(port)],
        start_new_session=True,
    )
    try:
        _wait_listening(port)
        url = f"http://127.0.0.1:{port}/ping"
        transports = {
            "wire": PinnedTransport,
            "httpcore-pinned": HttpcorePinnedTransport,
            "httpx": httpx.HTTPTransport,
        }
        clients = {name: make() for name, make in transports.items()}
        for client in clients.values():
            _measure(client, url, 200)  # warm-up: connection open, caches filled
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, client in clients.items():
                results[name].append(_measure(client, url, args.n))
        print(f"N={args.n} x {args.rounds} rounds, one keep-alive connection, median of rounds\n")
        print("| transport | wall ms/call | CPU ms/call |")
        print("|---|---:|---:|")
        for name, runs in results.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
        for client in clients.values():
            client.close()
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
