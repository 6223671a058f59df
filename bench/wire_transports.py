"""The HTTP executor's transport against httpx's own, on one keep-alive connection.

Measures, in one process and alternating rounds, the wall time and the CPU
time per ``GET /ping`` to ``bench/upstream.py``, each an ``httpx.Request`` handed
to the transport's ``handle_request`` (as the HTTP executor does), with:

- ``pinned``: ``executions.executors.http.pool.PinnedTransport`` (the executor's:
  the egress check on every call, then httpcore pools, one per set of checked
  addresses, whose network backend connects only to those addresses);
- ``httpx``: ``httpx.HTTPTransport()`` as shipped (httpcore and h11, no egress
  check): the floor of the library path;
- ``old``, with ``--old FILE``: the ``PinnedTransport`` class of another file, e.g.
  the hand-written HTTP/1.1 transport the executor used before decision 0003
  (``git show 6896f88:executions/executors/wire.py > /tmp/wire_old.py``).

    .venv/bin/python bench/wire_transports.py [--n 5000] [--rounds 5] [--old FILE]

Needs nothing but this checkout: the upstream runs on a free 127.0.0.1 port and
is stopped on exit. Prints a markdown table (median of the rounds).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TIMEOUTS = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
os.environ.setdefault("TOOLHUB_EGRESS_ALLOW", "127.0.0.1/32")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402

from executions.executors.http.pool import PinnedTransport  # noqa: E402


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


def _calls(transport: httpx.BaseTransport, url: str, n: int, done: list[int]) -> None:
    for i in range(n):
        request = httpx.Request("GET", url, params={"x": i}, extensions={"timeout": TIMEOUTS})
        response = transport.handle_request(request)
        response.read()
        response.close()
        if response.status_code != 200 or json.loads(response.content)["x"] != i:
            raise SystemExit(f"bad answer: {response.status_code} {response.content[:80]!r}")
    done.append(n)


def _measure(
    transport: httpx.BaseTransport, url: str, n: int, threads: int = 1
) -> tuple[float, float]:
    """Wall and CPU ms per call over ``n`` calls (each answer checked), called as the
    HTTP executor calls its transport: an ``httpx.Request`` to ``handle_request``,
    from ``threads`` threads at once (as a web or worker process's threads do)."""
    wall, cpu = time.perf_counter(), time.process_time()
    done: list[int] = []
    workers = [
        threading.Thread(target=_calls, args=(transport, url, n // threads, done))
        for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    n = n // threads * threads
    if sum(done) != n:
        raise SystemExit("a calling thread failed (see above)")
    return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def _old_transport(path: str) -> type[httpx.BaseTransport]:
    spec = importlib.util.spec_from_file_location("old_transport", path)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PinnedTransport


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="calls per transport and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="threads calling at once")
    parser.add_argument("--old", help="a file whose PinnedTransport is measured too")
    args = parser.parse_args()
    port = _free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(BENCH / "upstream.py"), "--port", str(port)],
        start_new_session=True,
    )
    try:
        _wait_listening(port)
        url = f"http://127.0.0.1:{port}/ping"
        transports = {"pinned": PinnedTransport, "httpx": httpx.HTTPTransport}
        if args.old:
            transports = {"old": _old_transport(args.old), **transports}
        clients = {name: make() for name, make in transports.items()}
        for client in clients.values():
            _measure(client, url, 200)  # warm-up: connection open, caches filled
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, client in clients.items():
                results[name].append(_measure(client, url, args.n, args.threads))
        print(
            f"N={args.n} x {args.rounds} rounds, {args.threads} thread(s), one keep-alive "
            "connection per thread, median of rounds\n"
        )
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
