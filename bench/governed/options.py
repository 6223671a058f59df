"""The command line of ``governed_vs_direct.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

from governed.environment import Target


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Governed calls through ToolHub vs direct calls, in one run."
    )
    parser.add_argument("--n", type=int, default=2000, help="calls per mode and concurrency")
    parser.add_argument("--concurrency", default="1,16", help="comma-separated, e.g. 1,16")
    parser.add_argument("--ramp", type=float, default=3.0, help="seconds to open the connections")
    parser.add_argument("--warmup", type=int, default=100, help="un-timed calls of each kind")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    # As docker-compose.yml and the Dockerfile run it: the ASGI application
    # (toolhub.asgi) under uvicorn workers; a WSGI class (gthread, sync) serves toolhub.wsgi.
    parser.add_argument("--gunicorn-worker-class", default="uvicorn_worker.UvicornWorker")
    # As docker-compose.yml and the Dockerfile run it. On 2 cores 8 threads per
    # worker measured 15-20 % fewer governed calls per second than 4 (GIL
    # contention; bench/README.md), so 4 is the production shape measured.
    parser.add_argument("--gunicorn-threads", type=int, default=4)
    parser.add_argument(
        "--server",
        choices=("gunicorn", "granian"),
        default="gunicorn",
        help="the WSGI server in front of ToolHub (both with --gunicorn-workers processes and "
        "--gunicorn-threads threads each)",
    )
    parser.add_argument("--celery-pool", default="prefork", help="prefork, threads, solo")
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--upstream-procs", type=int, default=1)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead of the load test: profile a governed call in-process (web and worker side)",
    )
    parser.add_argument(
        "--db-options",
        default="",
        help="query string added to DATABASE_URL (Django OPTIONS via dj-database-url), e.g. "
        "server_side_binding=true&prepare_threshold=2",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="override a Django setting for this run (bench/bench_settings.py), e.g. "
        "--set CELERY_DB_REUSE_MAX=1000; repeatable",
    )
    parser.add_argument(
        "--kill-db-connections",
        action="store_true",
        help="resilience check: terminate every connection to the bench database after the "
        "warm-up (as a PostgreSQL restart would); the governed calls must still succeed",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also measure, with the same client, what the web stack costs before any "
        "governance: GET /healthz (Django, no database) and GET /api/v1/executions/{id} "
        "(DRF, token authentication, one row read)",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="also MCP tools/call through /mcp (serves toolhub.asgi with uvicorn workers: "
        "REST and MCP on the same ASGI server)",
    )
    parser.add_argument(
        "--oauth",
        action="store_true",
        help="with --mcp: also MCP tools/call with an OAuth access token acting for a person "
        "(mode mcp_oauth), against the static agent token's (mode mcp)",
    )
    parser.add_argument("--profile-calls", type=int, default=300)
    parser.add_argument(
        "--ref",
        help="benchmark this git revision (exported to a temporary directory) instead of the "
        "working tree",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument(
        "--database",
        default=Target.database,
        help="the PostgreSQL database the run creates (dropped first) and drops at the end",
    )
    parser.add_argument(
        "--redis-db",
        type=int,
        default=Target.redis_db,
        help="the Redis db (cache and broker) the run flushes",
    )
    return parser.parse_args()


def is_asgi(worker_class: str) -> bool:
    return "uvicorn" in worker_class.lower()
