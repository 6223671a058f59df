"""The fill: migrate, seed through the services, then stream the generated rows with COPY.

Indexes and constraints are dropped before the load and rebuilt after it; tables are
loaded with COPY FREEZE inside the transaction that truncated them; VACUUM ANALYZE at
the end. What it took is kept in the database (``bench_scale_meta``) for the report.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time

from compliance.environment import DB_NAME, LOAD_TABLES, meta_set
from compliance.generator import Generator
from compliance.rows import APPROVAL_COLUMNS, AUDIT_COLUMNS, EXEC_COLUMNS, iso
from compliance.seed import load_catalog, seed
from harness.postgres import connect

REPORT_EVERY = 500_000


def ddl_for(conn) -> dict:
    """Constraints and indexes of the loaded tables (and foreign keys pointing at them)."""
    tables = list(LOAD_TABLES)
    constraints = conn.execute(
        """
        SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)
        FROM pg_constraint
        WHERE contype IN ('p', 'u', 'f')
          AND (conrelid::regclass::text = ANY(%s) OR confrelid::regclass::text = ANY(%s))
        ORDER BY contype DESC, conname
        """,
        (tables, tables),
    ).fetchall()
    indexes = conn.execute(
        """
        SELECT i.tablename, i.indexname, i.indexdef
        FROM pg_indexes i
        WHERE i.tablename = ANY(%s)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)
        ORDER BY i.tablename, i.indexname
        """,
        (tables,),
    ).fetchall()
    return {
        "constraints": [list(row) for row in constraints],
        "indexes": [list(row) for row in indexes],
    }


def drop_ddl(conn, ddl) -> None:
    # foreign keys first (they depend on the primary keys), then keys, then plain indexes
    for table, name, _kind, _ in sorted(ddl["constraints"], key=lambda c: c[2] != "f"):
        conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for _, name, _ in ddl["indexes"]:
        conn.execute(f'DROP INDEX "{name}"')


def rebuild_ddl(conn, ddl) -> list[dict]:
    timings = []
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("SET max_parallel_maintenance_workers = 2")
    steps = [
        (t, n, f'ALTER TABLE {t} ADD CONSTRAINT "{n}" {d}')
        for t, n, k, d in ddl["constraints"]
        if k != "f"
    ]
    steps += [(t, n, d) for t, n, d in ddl["indexes"]]
    steps += [
        (t, n, f'ALTER TABLE {t} ADD CONSTRAINT "{n}" {d}')
        for t, n, k, d in ddl["constraints"]
        if k == "f"
    ]
    for table, name, sql in steps:
        t0 = time.perf_counter()
        conn.execute(sql)
        conn.commit()
        elapsed = time.perf_counter() - t0
        timings.append({"table": table, "name": name, "seconds": round(elapsed, 1)})
        print(f"  {name:45s} {elapsed:7.1f} s", flush=True)
    return timings


def fill(n: int, chunk: int) -> None:
    import django

    django.setup()
    rng = random.Random(20240601)
    random.seed(20240602)
    stats: dict = {"executions": n, "started": dt.datetime.now(dt.UTC).isoformat()}
    t_all = time.perf_counter()
    catalog, head, seeded = _migrate_and_seed(rng, stats)
    end_us = int((time.time() - 120) * 1_000_000)
    start_us = end_us - 365 * 86400 * 1_000_000
    prepared = _prepare_tables(seeded)
    print(
        f"seeded {len(catalog['tools'])} tools, {len(catalog['agents'])} agents, "
        f"{prepared['seeded_events']} governance events; dropped "
        f"{len(prepared['ddl']['constraints'])} constraints and "
        f"{len(prepared['ddl']['indexes'])} indexes",
        flush=True,
    )
    gen = Generator(
        rng=rng,
        n=n,
        start_us=start_us,
        end_us=end_us,
        catalog=catalog,
        first_id=prepared["first_id"],
        first_sequence=head.sequence,
        prev_hash=head.hash,
    )
    loaded = _load(gen, n, chunk, prepared["seed_rows"])
    stats.update(
        load_copy_s=round(loaded["load_s"], 1),
        copy_stream_s=round(loaded["copy_stream_s"], 1),
        generator_s=round(loaded["generator_s"], 1),
        event_hash_s=round(gen.hash_seconds, 1),
        audit_events=gen.events + prepared["seeded_events"],
        execution_audit_events=gen.events,
        approvals=len(gen.approvals),
        copy_mb_executions=round(loaded["bytes_ex"] / 1e6),
        copy_mb_audit=round(loaded["bytes_au"] / 1e6),
        window={"start": iso(start_us), "end": iso(end_us)},
    )
    print(f"COPY done in {loaded['load_s']:.0f} s; rebuilding constraints and indexes", flush=True)
    _rebuild(gen, prepared["ddl"], stats)
    _vacuum_and_record(stats, t_all)
    print(json.dumps(stats, indent=1), flush=True)


def _migrate_and_seed(rng, stats: dict):
    """The schema, then the governance through the services, sealed: (catalog, chain head, seed)."""
    from django.core.management import call_command
    from django.db import connection

    from registry.models import AuditChainHead
    from registry.services.audit_chain import audit_seal_all

    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    stats["migrate_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    seeded = seed(rng)
    audit_seal_all(grace=dt.timedelta(0))
    stats["seed_s"] = round(time.perf_counter() - t0, 1)
    catalog = load_catalog(rng)
    head = AuditChainHead.objects.get(pk=1)
    connection.close()
    return catalog, head, seeded


def _prepare_tables(seeded: dict) -> dict:
    """Keep the governance events for the frozen COPY, check the columns, drop the indexes."""
    with connect(DB_NAME) as ctl:
        meta_set(ctl, "seed", seeded)
        first_id = ctl.execute(
            "SELECT coalesce(max(id), 0) + 1 FROM registry_auditevent"
        ).fetchone()[0]
        seeded_events = ctl.execute("SELECT count(*) FROM registry_auditevent").fetchone()[0]
        unsealed = ctl.execute(
            "SELECT count(*) FROM registry_auditevent WHERE sequence IS NULL"
        ).fetchone()[0]
        assert unsealed == 0, "seed events should all be sealed"
        # the governance events, re-inserted in the frozen COPY after TRUNCATE
        cols = ", ".join(AUDIT_COLUMNS)
        seed_rows = bytearray()
        with ctl.cursor().copy(
            f"COPY (SELECT {cols} FROM registry_auditevent ORDER BY id) TO STDOUT"
        ) as cp:
            for data in cp:
                seed_rows += data
        for table, columns in (
            ("executions_execution", EXEC_COLUMNS),
            ("registry_auditevent", AUDIT_COLUMNS),
            ("executions_approval", APPROVAL_COLUMNS),
        ):
            have = {
                r[0]
                for r in ctl.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
                    (table,),
                )
            }
            assert have == set(columns), f"{table}: columns changed: {sorted(have ^ set(columns))}"
        ddl = ddl_for(ctl)
        meta_set(ctl, "ddl", ddl)
        drop_ddl(ctl, ddl)
        ctl.commit()
    return {
        "first_id": first_id,
        "seeded_events": seeded_events,
        "seed_rows": bytes(seed_rows),
        "ddl": ddl,
    }


def _load(gen: Generator, n: int, chunk: int, seed_rows: bytes) -> dict:
    """TRUNCATE, then COPY FREEZE the executions and audit events side by side, then approvals."""
    from psycopg.copy import QueuedLibpqWriter

    ex_conn = connect(DB_NAME)
    au_conn = connect(DB_NAME)
    for c in (ex_conn, au_conn):
        c.execute("SET synchronous_commit = off")
    ex_conn.execute("TRUNCATE executions_approval, executions_execution")
    au_conn.execute("TRUNCATE registry_auditevent")
    t_load = time.perf_counter()
    ex_cur, au_cur = ex_conn.cursor(), au_conn.cursor()
    with (
        ex_cur.copy(
            f"COPY executions_execution ({', '.join(EXEC_COLUMNS)}) FROM STDIN WITH (FREEZE)",
            writer=QueuedLibpqWriter(ex_cur),
        ) as ex_copy,
        au_cur.copy(
            f"COPY registry_auditevent ({', '.join(AUDIT_COLUMNS)}) FROM STDIN WITH (FREEZE)",
            writer=QueuedLibpqWriter(au_cur),
        ) as au_copy,
    ):
        au_copy.write(seed_rows)
        streamed = _stream(gen, n, chunk, ex_copy, au_copy, t_load)
    t_copy_done = time.perf_counter()
    with ex_cur.copy(
        f"COPY executions_approval ({', '.join(APPROVAL_COLUMNS)}) FROM STDIN WITH (FREEZE)"
    ) as cp:
        cp.write("".join(gen.approvals).encode())
    ex_conn.commit()
    au_conn.commit()
    ex_conn.close()
    au_conn.close()
    load_s = time.perf_counter() - t_load
    return {**streamed, "load_s": load_s, "copy_stream_s": t_copy_done - t_load}


def _stream(gen: Generator, n: int, chunk: int, ex_copy, au_copy, t_load: float) -> dict:
    """Generate ``n`` executions ``chunk`` at a time into the two COPY streams, with progress."""
    gen_seconds = 0.0
    bytes_ex = bytes_au = 0
    done = 0
    next_report = REPORT_EVERY
    while done < n:
        size = min(chunk, n - done)
        g0 = time.perf_counter()
        ex_lines, au_lines = gen.chunk(size)
        if done + size >= n:
            au_lines += gen.finish()
        ex_data = "".join(ex_lines).encode()
        au_data = "".join(au_lines).encode()
        gen_seconds += time.perf_counter() - g0
        ex_copy.write(ex_data)
        au_copy.write(au_data)
        bytes_ex += len(ex_data)
        bytes_au += len(au_data)
        done += size
        if done >= next_report or done == n:
            next_report += REPORT_EVERY
            el = time.perf_counter() - t_load
            print(
                f"  {done:>11,} executions, {gen.events:>11,} events  {el:7.0f} s  "
                f"{done / el:8.0f} exec/s  (generator {gen_seconds:.0f} s, of which event_hash "
                f"{gen.hash_seconds:.0f} s)",
                flush=True,
            )
    return {"generator_s": gen_seconds, "bytes_ex": bytes_ex, "bytes_au": bytes_au}


def _rebuild(gen: Generator, ddl: dict, stats: dict) -> None:
    """Constraints and indexes back; the chain head and id sequence as the sealer leaves them."""
    with connect(DB_NAME) as ctl:
        t0 = time.perf_counter()
        stats["index_builds"] = rebuild_ddl(ctl, ddl)
        stats["index_s"] = round(time.perf_counter() - t0, 1)
        ctl.execute(
            "UPDATE registry_auditchainhead SET sequence = %s, hash = %s, updated_at = now() WHERE id = 1",
            (gen.sequence, gen.prev),
        )
        ctl.execute(
            "SELECT setval(pg_get_serial_sequence('registry_auditevent', 'id'), %s)",
            (gen.next_id - 1,),
        )
        ctl.commit()


def _vacuum_and_record(stats: dict, t_all: float) -> None:
    """VACUUM ANALYZE, then the sizes and status mix, kept with the fill's timings."""
    with connect(DB_NAME, autocommit=True) as ctl:
        t0 = time.perf_counter()
        ctl.execute("VACUUM (ANALYZE)")
        stats["vacuum_analyze_s"] = round(time.perf_counter() - t0, 1)
        stats["total_fill_s"] = round(time.perf_counter() - t_all, 1)
        stats["sizes"] = {
            name: {"total": total, "table": table, "indexes": idx}
            for name, total, table, idx in ctl.execute(
                """SELECT relname, pg_size_pretty(pg_total_relation_size(oid)),
                          pg_size_pretty(pg_relation_size(oid)), pg_size_pretty(pg_indexes_size(oid))
                   FROM pg_class WHERE relname = ANY(%s)""",
                (list(LOAD_TABLES),),
            ).fetchall()
        }
        stats["database_size"] = ctl.execute(
            "SELECT pg_size_pretty(pg_database_size(current_database()))"
        ).fetchone()[0]
        stats["status_mix"] = dict(
            ctl.execute(
                "SELECT status, count(*) FROM executions_execution GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
        )
        meta_set(ctl, "fill", stats)
