"""The local PostgreSQL server the benchmarks use: databases they create and drop, counters."""

from __future__ import annotations

import psycopg

PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
STAT_FIELDS = ("sessions", "xact_commit", "xact_rollback", "tup_inserted", "tup_updated")


def connect(dbname: str = "postgres", **kwargs) -> psycopg.Connection:
    return psycopg.connect(dbname=dbname, **PG, **kwargs)


def database_exists(name: str) -> bool:
    with connect(autocommit=True) as conn:
        return bool(
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        )


def recreate_database(name: str, *, announce: bool = False) -> None:
    """Create the database ``name``, dropping it first (its sessions too) if it exists."""
    with connect(autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and announce:
            print(f"dropping the existing {name}")
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")


def drop_database(name: str) -> None:
    with connect(autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def try_advisory_lock(key: int) -> psycopg.Connection | None:
    """A session holding the advisory lock ``key`` (closing it releases it), or None if taken."""
    conn = connect(autocommit=True)
    if conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        return conn
    conn.close()
    return None


def server_version() -> str:
    with connect() as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


class PgStats:
    """Counters of one database from pg_stat_database (one connection, kept open)."""

    def __init__(self, db_name: str) -> None:
        self.db_name = db_name
        self.conn = connect(autocommit=True)

    def snapshot(self) -> dict[str, float]:
        row = self.conn.execute(
            f"SELECT {', '.join(STAT_FIELDS)} FROM pg_stat_database WHERE datname = %s",
            (self.db_name,),
        ).fetchone()
        return dict(zip(STAT_FIELDS, (float(v or 0) for v in row), strict=True))

    def close(self) -> None:
        self.conn.close()
