"""The settings a run prescribes, its database and the notes the fill leaves for the measurements."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import sys
import tempfile
from pathlib import Path

from harness import BENCH, rsa_private_key
from harness.machine import cpu_model, mem_total_kib
from harness.postgres import connect

DB_NAME = "toolhub_scale"
RESULTS_PATH = BENCH / "compliance_scale_results.json"
STATIC_ROOT = str(Path(tempfile.gettempdir()) / "toolhub_scale_static")
SLOW_MS = 100.0
LOAD_TABLES = ("executions_execution", "executions_approval", "registry_auditevent")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def configure_env() -> None:
    """The production-shaped settings the task prescribes (kept when a child inherits them)."""
    from cryptography.fernet import Fernet

    fixed = {
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "testserver,127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "STATIC_ROOT": STATIC_ROOT,
        "DJANGO_SETTINGS_MODULE": "toolhub.settings",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(fixed)
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.setdefault("TOOLHUB_ENCRYPTION_KEYS", Fernet.generate_key().decode())
    os.environ.setdefault("TOOLHUB_AUDIT_SIGNING_KEY", secrets.token_urlsafe(32))
    if not os.environ.get("TOOLHUB_OIDC_RSA_PRIVATE_KEY"):
        os.environ["TOOLHUB_OIDC_RSA_PRIVATE_KEY"] = rsa_private_key()
    # Embedded cache and in-process tasks: nothing here may touch the shared Redis.
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)


def meta_get(conn, key: str, default=None):
    conn.execute("CREATE TABLE IF NOT EXISTS bench_scale_meta (key text PRIMARY KEY, value jsonb)")
    row = conn.execute("SELECT value FROM bench_scale_meta WHERE key = %s", (key,)).fetchone()
    return row[0] if row else default


def meta_set(conn, key: str, value) -> None:
    from psycopg.types.json import Jsonb

    conn.execute("CREATE TABLE IF NOT EXISTS bench_scale_meta (key text PRIMARY KEY, value jsonb)")
    conn.execute(
        "INSERT INTO bench_scale_meta VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        (key, Jsonb(value)),
    )


def machine_info() -> dict:
    info = {"cpus": os.cpu_count()}
    kib = mem_total_kib()
    if kib:
        info["ram_gib"] = round(kib / 1024 / 1024, 1)
    model = cpu_model()
    if model:
        info["cpu"] = model
    with connect() as conn:
        info["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        for name in ("shared_buffers", "work_mem", "max_wal_size", "wal_level"):
            info[name] = conn.execute(f"SHOW {name}").fetchone()[0]
    info["python"] = sys.version.split()[0]
    return info
