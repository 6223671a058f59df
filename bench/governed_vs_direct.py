"""Governed calls through ToolHub vs direct calls to the same upstream, in one run.

    .venv/bin/python bench/governed_vs_direct.py [--n 2000] [--concurrency 1,16]
    .venv/bin/python bench/governed_vs_direct.py --profile      # in-process profile instead

What it does (see bench/README.md for the results and how to read them):

1. starts a fast HTTP/1.1 upstream on 127.0.0.1 (bench/upstream.py) and checks its capacity;
2. creates the PostgreSQL database ``toolhub_bench`` (dropped first), migrates it with a
   production-like environment (DEBUG off, generated SECRET_KEY and Fernet key, Redis db 9
   as cache and broker) and seeds an agent allowed to ``execute`` one ``http`` tool;
3. starts ToolHub under gunicorn (2 uvicorn workers serving ``toolhub.asgi`` by default)
   and a Celery worker;
4. for each concurrency: N direct calls (httpx) and N governed calls
   (``POST /api/v1/executions`` with ``wait: true``), each checked, with requests/s,
   p50, p99, CPU per call of every component, and a per-phase breakdown of the governed
   latency from the Execution rows' timestamps;
5. checks that every governed call's Execution row is ``succeeded`` in the database;
6. stops everything it started and drops the database (also on Ctrl-C and errors).

``--database NAME`` and ``--redis-db N`` choose another database and Redis db. The code is
in ``bench/governed/`` (this benchmark) and ``bench/harness/`` (what benchmarks share).
"""

from __future__ import annotations

import sys

from governed.main import main

if __name__ == "__main__":
    sys.exit(main())
