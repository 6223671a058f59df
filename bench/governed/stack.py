"""What a run starts: the upstream, the database's schema and seed, Celery and the web server."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from governed.options import is_asgi
from harness import BENCH
from harness.processes import Processes, free_port, run_checked, wait_until

PY = sys.executable


def start_upstream(procs: Processes, env: dict[str, str], upstream_procs: int):
    """The upstream on a free port, once it answers: (process, port)."""
    port = free_port()
    cmd = [PY, str(BENCH / "upstream.py"), "--port", str(port), "--procs", str(upstream_procs)]
    upstream = procs.start("upstream", cmd, env)
    url = f"http://127.0.0.1:{port}"
    wait_until(
        "upstream",
        lambda: httpx.get(f"{url}/ping?x=1", timeout=1).status_code == 200,
        10,
        procs,
    )
    return upstream, port


def upstream_capacity(port: int, total: int = 20000, batch: int = 100) -> tuple[float, float]:
    """(pipelined, one-at-a-time) requests/s of the upstream on one raw keep-alive socket."""
    request = b"GET /ping?x=7 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(request)
        size = len(sock.recv(4096))
        started = time.perf_counter()
        for _ in range(total // batch):
            sock.sendall(request * batch)
            got = 0
            while got < size * batch:
                got += len(sock.recv(1 << 20))
        pipelined = total / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(total // 4):
            sock.sendall(request)
            got = 0
            while got < size:
                got += len(sock.recv(4096))
        serial = (total // 4) / (time.perf_counter() - started)
    return pipelined, serial


def migrate_and_seed(launch: list[str], env: dict[str, str], src: Path, upstream_url: str) -> dict:
    """The schema, then the agent, role, tool, grant and token (bench_django.py seed)."""
    run_checked([*launch, "manage.py", "migrate", "--noinput"], env, src)
    out = run_checked(
        [*launch, str(BENCH / "bench_django.py"), "seed", "--upstream", upstream_url], env, src
    )
    return json.loads(out.strip().splitlines()[-1])


def oauth_token(launch: list[str], env: dict[str, str], src: Path, resource: str) -> str:
    """An OAuth access token for a person at ``resource`` (bench_django.py oauth_token)."""
    out = run_checked(
        [*launch, str(BENCH / "bench_django.py"), "oauth_token", "--resource", resource], env, src
    )
    return json.loads(out.strip().splitlines()[-1])["token"]


def start_celery(procs: Processes, launch: list[str], env: dict[str, str], args):
    cmd = [
        *launch,
        "-m",
        "celery",
        "-A",
        "toolhub",
        "worker",
        "-Q",
        "http,database,mcp,python,default",
        "-P",
        args.celery_pool,
        "-c",
        str(args.celery_concurrency),
        "-n",
        f"bench-{secrets.token_hex(4)}@localhost",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        "WARNING",
    ]
    return procs.start("celery", cmd, env)


def run_profile(launch: list[str], env: dict[str, str], src: Path, seed: dict, calls: int) -> int:
    """The in-process profile (bench_django.py profile) instead of the load; its exit code."""
    cmd = [
        *launch,
        str(BENCH / "bench_django.py"),
        "profile",
        "--tool-id",
        seed["tool_id"],
        "--token",
        seed["token"],
        "--calls",
        str(calls),
    ]
    return subprocess.run(cmd, cwd=src, env=env, check=False).returncode


def web_command(args, launch: list[str], port: int) -> list[str]:
    if args.server == "granian":
        return [
            *launch,
            "-m",
            "granian",
            "--interface",
            "wsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.gunicorn_workers),
            "--blocking-threads",
            str(args.gunicorn_threads),
            "--no-access-log",
            "--log-level",
            "warning",
            "toolhub.wsgi:application",
        ]
    cmd = [
        *launch,
        "-m",
        "gunicorn",
        "toolhub.asgi:application"
        if is_asgi(args.gunicorn_worker_class)
        else "toolhub.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.gunicorn_workers),
        "--worker-class",
        args.gunicorn_worker_class,
        "--keep-alive",
        "75",
        "--log-level",
        "warning",
    ]
    if args.gunicorn_worker_class == "gthread":
        cmd += ["--threads", str(args.gunicorn_threads)]
    return cmd


def start_web(procs: Processes, launch: list[str], env: dict[str, str], args):
    """ToolHub's web server on a free port, once /healthz answers: (process, port, base URL)."""
    port = free_port()
    web = procs.start("gunicorn", web_command(args, launch, port), env)
    base = f"http://127.0.0.1:{port}"
    wait_until(
        "gunicorn",
        lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200,
        # Workers import Django, DRF, the OAuth toolkit and allauth before they answer:
        # on a slow or busy machine that alone has taken over 30 s.
        120,
        procs,
    )
    return web, port, base
