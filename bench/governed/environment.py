"""Where a run keeps its state (database, Redis db) and the environment of what it starts."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

import redis
from cryptography.fernet import Fernet

from harness import BENCH, ROOT, rsa_private_key


@dataclass(frozen=True)
class Target:
    """The PostgreSQL database the run creates and drops, and the Redis db it flushes."""

    database: str = "toolhub_bench"
    redis_db: int = 9

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", self.database):
            raise SystemExit(f"--database: {self.database!r} is not a plain PostgreSQL name")

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:5432/{self.database}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:6379/{self.redis_db}"


def bench_env(
    tmp: Path, src: Path, target: Target, db_options: str = "", overrides: dict | None = None
) -> dict[str, str]:
    """A production-like environment (DEBUG off) pointing at the bench database and Redis db."""
    drop = (
        "DJANGO_",
        "CELERY_",
        "TOOLHUB_",
        "SECURE_",
        "DATABASE_URL",
        "REDIS_URL",
        "DEBUG",
        "PYTHONPATH",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PYTHONPATH=str(src),
        TOOLHUB_BENCH_SRC=str(src),
        DJANGO_SETTINGS_MODULE="toolhub.settings",
        DATABASE_URL=target.database_url + (f"?{db_options}" if db_options else ""),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        TOOLHUB_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        TOOLHUB_AUDIT_SIGNING_KEY=secrets.token_urlsafe(32),
        TOOLHUB_OIDC_RSA_PRIVATE_KEY=rsa_private_key(),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        REDIS_URL=target.redis_url,
        CELERY_BROKER_URL=target.redis_url,
        TOOLHUB_EGRESS_ALLOW="127.0.0.1/32",
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        TOOLHUB_VAR_DIR=str(tmp / "var"),
        MEDIA_ROOT=str(tmp / "media"),
        PYTHONUNBUFFERED="1",
    )
    if overrides:
        env.update(
            DJANGO_SETTINGS_MODULE="bench_settings",
            PYTHONPATH=f"{src}{os.pathsep}{BENCH}",
            TOOLHUB_BENCH_OVERRIDES=json.dumps(overrides),
        )
    return env


def parse_overrides(items: list[str]) -> dict:
    overrides = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set needs NAME=VALUE, got {item!r}")
        try:
            overrides[name] = json.loads(raw)
        except ValueError:
            overrides[name] = raw
    return overrides


def export_revision(ref: str, tmp: Path) -> Path:
    """An export of a committed revision in the temporary directory (``--ref``)."""
    src = tmp / "src"
    src.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    return src


def flush_redis(target: Target) -> None:
    client = redis.Redis.from_url(target.redis_url)
    try:
        client.flushdb()
    finally:
        client.close()


def redis_version(target: Target) -> str:
    client = redis.Redis.from_url(target.redis_url)
    try:
        return client.info("server")["redis_version"]
    finally:
        client.close()
