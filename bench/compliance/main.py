"""The command line of ``compliance_scale.py``: fill (in a child process), then measure."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from compliance.environment import DB_NAME, STATIC_ROOT, configure_env, meta_get
from harness import BENCH
from harness.postgres import connect, database_exists, recreate_database

ENTRY = BENCH / "compliance_scale.py"
GB_PER_MILLION = (
    3.2e9  # measured: per million executions (with their audit events), indexes included
)


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--executions", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--skip-fill", action="store_true", help="reuse the filled toolhub_scale")
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument(
        "--only", help="regex: run only the measurements whose 'group case' matches"
    )
    parser.add_argument("--no-full-verify", action="store_true")
    parser.add_argument(
        "--_fill-child", dest="fill_child", action="store_true", help=argparse.SUPPRESS
    )
    return parser.parse_args()


def main(description: str) -> None:
    args = parse_args(description)
    configure_env()
    if args.fill_child:
        from compliance.fill import fill

        fill(args.executions, args.chunk)
        return
    if not args.skip_fill:
        fill_in_child(args)
    elif not database_exists(DB_NAME):
        sys.exit(f"{DB_NAME} does not exist: run without --skip-fill first")
    if not args.fill_only:
        bench(args)


def fill_in_child(args) -> None:
    """(Re)create the database and fill it in a child, so measuring starts from a fresh process."""
    free = shutil.disk_usage(
        "/var/lib/postgresql" if Path("/var/lib/postgresql").exists() else "/"
    ).free
    estimate = GB_PER_MILLION * args.executions / 1e6
    print(
        f"free disk: {free / 1e9:.0f} GB; the database will take about {estimate / 1e9:.0f} GB",
        flush=True,
    )
    if estimate > free * 0.8:
        sys.exit("not enough free disk for that many executions: use a smaller --executions")
    recreate_database(DB_NAME, announce=True)
    t0 = time.time()
    child = [sys.executable, str(ENTRY), "--_fill-child"]
    child += ["--executions", str(args.executions), "--chunk", str(args.chunk)]
    subprocess.run(child, check=True)
    print(f"fill finished in {time.time() - t0:.0f} s", flush=True)


def bench(args) -> None:
    """Every measurement, in-process with Django's test client (a superuser's session)."""
    import django

    django.setup()
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.test import RequestFactory

    from compliance.admin_cases import run_audit_admin, run_execution_admin
    from compliance.api_cases import run_audit_api, run_execution_api
    from compliance.export_cases import run_exports
    from compliance.measure import Bench
    from compliance.results import print_table, results_of, write_results
    from compliance.samples import find_samples
    from compliance.verify import run_verify
    from executions.models import Execution
    from registry.models import AuditEvent

    context = prepare()
    admin_user = get_user_model().objects.get(username="bench-admin")
    b = Bench(args.only)
    client = b.Client()
    client.force_login(admin_user)
    reviewer_client = b.Client(
        HTTP_AUTHORIZATION=f"Bearer {context['seed'].get('reviewer_token', '')}"
    )
    request = RequestFactory().get("/")
    request.user = admin_user
    s = find_samples()
    warm_up(client)
    admins = admin.site._registry[Execution], admin.site._registry[AuditEvent]
    run_execution_admin(b, client, s, request, admins[0])
    run_audit_admin(b, client, s, request, admins[1])
    run_execution_api(b, client, reviewer_client, s)
    run_audit_api(b, client, s)
    run_exports(b, client, s)
    verify = {}
    if not b.only or b.only.search("verify"):
        verify = run_verify(full=not args.no_full_verify)
    results = results_of(b, s, verify, context, admins)
    write_results(results, args.only)
    print_table(results)


def prepare() -> dict:
    """Static files, then migrations added since the fill (e.g. new indexes), timed; the fill's notes."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    if not (Path(STATIC_ROOT) / "staticfiles.json").exists():
        call_command("collectstatic", interactive=False, verbosity=0)
    plan = MigrationExecutor(connection).migration_plan(
        MigrationExecutor(connection).loader.graph.leaf_nodes()
    )
    migrations_applied = []
    for migration, _backwards in plan:
        t0 = time.perf_counter()
        call_command("migrate", migration.app_label, migration.name, verbosity=0)
        took = round(time.perf_counter() - t0, 1)
        migrations_applied.append(
            {"migration": f"{migration.app_label}.{migration.name}", "seconds": took}
        )
        print(f"applied {migration.app_label}.{migration.name} in {took} s", flush=True)
    if migrations_applied:
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    load_before = os.getloadavg()
    with connect(DB_NAME) as ctl:
        fill_stats = meta_get(ctl, "fill", {})
        seeded = meta_get(ctl, "seed", {})
        ctl.commit()
    return {
        "migrations": migrations_applied,
        "load_before": load_before,
        "fill": fill_stats,
        "seed": seeded,
    }


def warm_up(client) -> None:
    """Templates compiled, URLconf and admin loaded (so "first" is about the database)."""
    for url in (
        "/admin/",
        "/admin/executions/execution/?q=warm-up",
        "/admin/registry/auditevent/?q=warm-up",
        "/api/v1/executions?page_size=1",
    ):
        client.get(url)
