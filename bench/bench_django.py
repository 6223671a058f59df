"""Django-side helpers of the benchmark, run by ``governed_vs_direct.py`` with its environment.

    python bench/bench_django.py seed --upstream http://127.0.0.1:PORT
        Create an owner, a role, an agent in it, an ``http`` tool on ``/ping``
        with one integer parameter ``x``, an ``execute`` grant and a token.
        Prints one JSON line: {"tool_id", "tool_name", "token", "agent_id"}.

    python bench/bench_django.py profile --tool-id ID --token TOKEN [--calls 300]
        In-process profile of the governed call (Django test client, real
        PostgreSQL, real Redis, a real Celery worker running the tasks):
        queries per call on the web side and in the worker task, wall time of
        each side, and cProfile's top functions of each.

Needs DJANGO_SETTINGS_MODULE=toolhub.settings and the benchmark's environment.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import sys
import time
from pathlib import Path

# The code under test: the working tree, or the export given by governed_vs_direct.py --ref.
ROOT = Path(os.environ.get("TOOLHUB_BENCH_SRC") or Path(__file__).resolve().parent.parent)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")

import django  # noqa: E402

if os.environ.get("BENCH_SERVING_POOL") and len(sys.argv) > 1 and sys.argv[1] == "profile":
    # As a web process serves (BENCH_SERVING_POOL=1): its bounded connection pool, where the
    # revision has one; revisions without it keep a connection per thread.
    try:
        from toolhub.db import pool as _pool

        _pool.configure_process("web")
    except ImportError:
        pass
django.setup()


def seed(args) -> None:
    from django.contrib.auth import get_user_model

    from registry.services import agents as agent_services
    from registry.services import grants as grant_services
    from registry.services import roles as role_services
    from registry.services import tokens as token_services
    from registry.services import tools as tool_services

    owner = get_user_model().objects.create_user(username="bench-owner", password=None)
    role = role_services.role_create(actor=None, name="bench-callers")
    agent = agent_services.agent_create(
        actor=None, name="bench-agent", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="bench_ping",
        type="http",
        description="Benchmark upstream: GET /ping?x=N",
        timeout_seconds=10,
        parameters=[{"name": "x", "type": "integer", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": args.upstream},
            {"config_key": "endpoint", "config_value": "/ping"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    _token, raw = token_services.token_issue(actor=None, user=agent.user, name="bench")
    print(
        json.dumps(
            {
                "tool_id": str(tool.pk),
                "tool_name": tool.name,
                "token": raw,
                "agent_id": str(agent.pk),
            }
        )
    )


# --------------------------------------------------------------------------- profile


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _summary(label: str, samples: list[float], cpu: float | None = None) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, max(0, int(len(ordered) * 0.99 + 0.5) - 1))]
    text = (
        f"{label}: n={len(samples)} p50={_ms(statistics.median(ordered))} ms "
        f"mean={_ms(statistics.fmean(ordered))} ms p99={_ms(p99)} ms"
    )
    if cpu is not None:
        text += f"; CPU of this process {_ms(cpu / len(samples))} ms per call"
    return text


def _timed(fn, items) -> tuple[list[float], float]:
    """Wall time of each ``fn(item)`` and the process CPU time of the whole loop."""
    durations = []
    cpu = time.process_time()
    for item in items:
        started = time.perf_counter()
        fn(item)
        durations.append(time.perf_counter() - started)
    return durations, time.process_time() - cpu


class QueryRecorder:
    """Every SQL statement (and COMMIT) on the default connection, timed with perf_counter.

    ``execute_wrapper`` sees the statements; COMMIT goes through ``_commit``,
    which is timed by shadowing it on the connection object for the duration.
    """

    def __init__(self) -> None:
        from django.db import connections

        self.connection = connections["default"]
        self.queries: list[tuple[str, float]] = []
        self._wrapper = None

    def _record(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append((sql, time.perf_counter() - started))

    def __enter__(self):
        self.connection.ensure_connection()
        self._wrapper = self.connection.execute_wrapper(self._record)
        self._wrapper.__enter__()
        real_commit = type(self.connection)._commit.__get__(self.connection)

        def timed_commit():
            started = time.perf_counter()
            try:
                return real_commit()
            finally:
                self.queries.append(("COMMIT", time.perf_counter() - started))

        self.connection._commit = timed_commit
        return self

    def __exit__(self, *exc):
        self._wrapper.__exit__(*exc)
        del self.connection._commit
        return False


def _print_queries(title: str, queries: list[tuple[str, float]]) -> None:
    total = sum(seconds for _sql, seconds in queries)
    print(
        f"\n### {title}: {len(queries)} statements, {total * 1000:.2f} ms waiting on PostgreSQL"
        " (round trip incl. driver)"
    )
    for number, (sql, seconds) in enumerate(queries, 1):
        text = " ".join(sql.split())
        if text.startswith("SELECT") and " FROM " in text:
            # The column list says little; keep what is selected from and the condition.
            text = "SELECT … " + text[text.index(" FROM ") + 1 :]
        print(f"{number:3d}. {seconds * 1000:6.3f} ms  {text[:170]}")


def _print_profile(title: str, profiler: cProfile.Profile, calls: int, top: int) -> None:
    print(f"\n### {title} (cProfile over {calls} calls; times are totals for all calls)")
    if dump := os.environ.get("BENCH_PSTATS"):
        # For comparing two revisions call by call (pstats files, one per measurement).
        profiler.dump_stats(f"{dump}.{re.sub(r'[^a-z]+', '-', title.lower()).strip('-')}")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    # ToolHub's own functions first (paths kept so the filter can see the app directories).
    stats.sort_stats("cumulative").print_stats(r"/(toolhub|registry|executions)/", top)
    stats.strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(20)
    root = str(ROOT) + "/"
    text = out.getvalue().replace(root, "")
    print("\n".join(line for line in text.splitlines() if line.strip()))


def profile(args) -> None:
    from unittest import mock

    from django.test import Client

    from executions.models import Execution
    from executions.services import pipeline, runner
    from toolhub import context

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {args.token}")
    counter = iter(range(10**9))

    def call(wait: bool) -> dict:
        body = {"tool_id": args.tool_id, "input_data": {"x": next(counter)}, "wait": wait}
        response = client.post(
            "/api/v1/executions", data=json.dumps(body), content_type="application/json"
        )
        data = response.json()
        expected = (200, "succeeded") if wait else (202, "queued")
        if (response.status_code, data.get("status")) != expected:
            raise SystemExit(f"unexpected answer {response.status_code}: {data}")
        return data

    calls = args.calls
    print(f"# In-process profile: Django test client, {calls} calls per measurement")
    print("# (no gunicorn/HTTP: the numbers are Django + DB + Redis + Celery worker only)")

    # Warm up: connections, caches, imports, the worker.
    for _ in range(30):
        call(True)

    # 1. Full governed call (wait=true), the worker runs the task.
    with QueryRecorder() as web_full:
        call(True)
    durations, cpu = _timed(lambda _: call(True), range(calls))
    print("\n## Web side, wait=true (real worker)")
    print(_summary("wall time per call", durations, cpu))
    _print_queries("Queries of one wait=true request (web process)", web_full.queries)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call(True)
    profiler.disable()
    _print_profile("Web side, wait=true", profiler, calls, args.top)

    # 2. Admission only (wait=false), the task is not sent: what the web side costs by itself.
    queued: list[str] = []
    with mock.patch.object(pipeline, "enqueue", lambda execution, tool: True):
        for _ in range(5):
            queued.append(call(False)["id"])
        with QueryRecorder() as web_admit:
            queued.append(call(False)["id"])
        durations, cpu = _timed(lambda _: queued.append(call(False)["id"]), range(calls))
        admit_profiler = cProfile.Profile()
        admit_profiler.enable()
        for _ in range(calls):
            queued.append(call(False)["id"])
        admit_profiler.disable()
    print("\n## Web side, admission only (wait=false, task not sent)")
    print(_summary("wall time per call", durations, cpu))
    _print_queries("Queries of one admission (web process)", web_admit.queries)
    _print_profile("Web side, admission only", admit_profiler, calls, args.top)

    # 3. Worker side: the task body (runner.execution_run) in this process, on the rows queued above.
    def run(execution_id: str) -> None:
        with context.bind(request_id=f"task-{execution_id}"):
            runner.execution_run(execution_id=execution_id)

    pending = list(queued)
    for execution_id in pending[:5]:
        run(execution_id)
    with QueryRecorder() as worker_queries:
        run(pending[5])
    durations, cpu = _timed(run, pending[6 : 6 + calls])
    worker_profiler = cProfile.Profile()
    worker_profiler.enable()
    for execution_id in pending[6 + calls :]:
        run(execution_id)
    worker_profiler.disable()
    print("\n## Worker side: runner.execution_run (the Celery task body, in-process)")
    print(_summary("wall time per task", durations, cpu))
    _print_queries("Queries of one task (worker process)", worker_queries.queries)
    _print_profile("Worker side", worker_profiler, len(pending) - 6 - calls, args.top)

    # 4. The pieces between the two: publishing the task, and the wake-up.
    execution = Execution.objects.select_related("tool").get(pk=pending[0])
    durations = []
    for _ in range(calls):  # the worker gets these and does nothing (the row is final)
        started = time.perf_counter()
        pipeline.enqueue(execution, execution.tool)
        durations.append(time.perf_counter() - started)
    print("\n## Hops")
    print(_summary("enqueue (apply_async to Redis) per call", durations))
    from executions.services import notify

    redis_client = notify._redis()
    durations = []
    for number in range(calls):
        started = time.perf_counter()
        notify.notify_done(f"bench-{number}")
        redis_client.blpop([notify._KEY.format(f"bench-{number}")], timeout=1)
        durations.append(time.perf_counter() - started)
    print(_summary("notify_done + BLPOP round trip (same process)", durations))
    # 5. Calibration: what one statement costs by itself on this machine.
    from django.db import connection

    from registry.models import Tool

    print("\n## Cost of one statement (calibration)")
    with connection.cursor() as cursor:
        durations, cpu = _timed(
            lambda _: cursor.execute("SELECT 1") or cursor.fetchall(), range(2000)
        )
    print(_summary("raw SELECT 1 through Django's cursor", durations, cpu))
    durations, cpu = _timed(lambda _: Execution.objects.filter(pk=pending[0]).first(), range(1000))
    print(_summary("ORM Execution.objects.filter(pk=…).first()", durations, cpu))
    durations, cpu = _timed(
        lambda _: Execution.objects.filter(pk=pending[0]).values_list("status", flat=True).first(),
        range(1000),
    )
    print(_summary("ORM .values_list('status').first()", durations, cpu))
    durations, cpu = _timed(lambda _: Tool.objects.get(pk=args.tool_id), range(1000))
    print(_summary("ORM Tool.objects.get(pk=…)", durations, cpu))
    from django.db import transaction

    def insert_commit(_):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("INSERT INTO bench_calibration (v) VALUES (%s)", ["x"])

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_calibration (id serial, v text)")
    durations, cpu = _timed(insert_commit, range(500))
    print(_summary("INSERT + COMMIT (one WAL flush)", durations, cpu))
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_calibration")

    failed = [e for e in pending if Execution.objects.get(pk=e).status != "succeeded"]
    print(f"\nrows run in-process that did not succeed: {len(failed)}")


def oauth_token(args) -> None:
    """A person in the bench role, an OAuth client and an access token acting for that person
    at ``--resource`` (the MCP endpoint): what the consent page and the token endpoint would
    leave behind, made directly so the bench measures the calls, not a browser.
    Prints one JSON line: {"token"}."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone
    from oauth2_provider.models import AccessToken, Application, set_token_value

    from registry.oauth.tokens import access_token
    from registry.services.consents import consent_give

    person = get_user_model().objects.create_user(username="bench-person", password=None)
    person.groups.add(Group.objects.get(name="bench-callers"))
    client = Application.objects.create(
        name="bench client",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback",
    )
    consent_give(
        person=person, client=client, resource=args.resource, scopes=["tools:read", "tools:call"]
    )
    token = AccessToken(
        user=person,
        application=client,
        expires=timezone.now() + timedelta(hours=6),
        scope="tools:read tools:call",
        resource=[args.resource],
    )
    raw = access_token(None)
    set_token_value(token, raw)
    token.save()
    print(json.dumps({"token": raw}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    seed_parser = sub.add_parser("seed")
    seed_parser.add_argument("--upstream", required=True)
    profile_parser = sub.add_parser("profile")
    profile_parser.add_argument("--tool-id", required=True)
    profile_parser.add_argument("--token", required=True)
    profile_parser.add_argument("--calls", type=int, default=300)
    profile_parser.add_argument("--top", type=int, default=30)
    oauth_parser = sub.add_parser("oauth_token")
    oauth_parser.add_argument("--resource", required=True)
    args = parser.parse_args()
    {"seed": seed, "profile": profile, "oauth_token": oauth_token}[args.command](args)


if __name__ == "__main__":
    main()
