# ruff: noqa: UP031  (percent formatting of row templates in the generator: fast and readable)
"""Compliance at scale: 10 million executions and their sealed audit log, then what reviewers wait for.

    .venv/bin/python bench/compliance_scale.py [--executions 10000000] [--skip-fill] [--only PATTERN]

1. Fill (unless ``--skip-fill``): (re)create the database ``toolhub_scale``, migrate it,
   create tools, roles, agents and people through the project's services (so their
   governance events are real and sealed), then stream N executions, their audit
   events (admission decision + outcome, as the pipeline writes them; refusals and
   cache hits have one, approval-gated calls three) and approvals into PostgreSQL
   with COPY. Audit events are sealed in the generator with
   ``registry.services.audit_chain.event_hash`` (sequence / prev_hash / hash) and the
   chain head is set, so ``audit_verify`` passes. Indexes and constraints are
   dropped before the load and rebuilt after it; tables are loaded with COPY FREEZE
   inside the transaction that truncated them; VACUUM ANALYZE at the end. The fill
   runs in a child process so the measurements below start from a fresh process.
2. Measure, in-process with ``django.test.Client`` (superuser session): the admin
   changelists of executions and audit events with each filter they offer, search,
   paging, the API's cursor pages and filters, exports (endpoint if present, else
   ``registry.exports``), and ``audit_verify`` throughput. Every query over 100 ms is
   EXPLAINed (ANALYZE, BUFFERS).

Results: ``bench/compliance_scale_results.json`` (and a Markdown table on stdout).
Drop the database afterwards with::

    psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE toolhub_scale WITH (FORCE)'
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import heapq
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "toolhub_scale"
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
RESULTS_PATH = ROOT / "bench" / "compliance_scale_results.json"
STATIC_ROOT = str(Path(tempfile.gettempdir()) / "toolhub_scale_static")
SLOW_MS = 100.0
LOAD_TABLES = ("executions_execution", "executions_approval", "registry_auditevent")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# --------------------------------------------------------------------------- environment


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
    # Embedded cache and in-process tasks: nothing here may touch the shared Redis.
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)


def pg_connect(dbname: str, **kwargs):
    import psycopg

    return psycopg.connect(dbname=dbname, **PG, **kwargs)


def create_database() -> None:
    with pg_connect("postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone():
            print(f"dropping the existing {DB_NAME}")
            conn.execute(f"DROP DATABASE {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def database_exists() -> bool:
    with pg_connect("postgres", autocommit=True) as conn:
        return bool(
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone()
        )


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
    try:
        mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
        info["ram_gib"] = round(int(mem) / 1024 / 1024, 1)
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    with pg_connect("postgres") as conn:
        info["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        for name in ("shared_buffers", "work_mem", "max_wal_size", "wal_level"):
            info[name] = conn.execute(f"SHOW {name}").fetchone()[0]
    info["python"] = sys.version.split()[0]
    return info


# --------------------------------------------------------------------------- seed (services)

ROLES = {
    "customer-support": ["crm", "billing", "tickets"],
    "analyst": ["warehouse", "reports", "billing"],
    "sre": ["infra", "monitoring", "tickets"],
    "finance-ops": ["billing", "payments", "reports"],
    "data-science": ["warehouse", "ml", "search"],
}
CATEGORIES = [
    "crm",
    "billing",
    "tickets",
    "warehouse",
    "reports",
    "infra",
    "monitoring",
    "payments",
    "ml",
    "search",
]
VERBS = [
    "lookup",
    "search",
    "list",
    "get",
    "create",
    "update",
    "summarize",
    "export",
    "refund",
    "restart",
]
N_TOOLS = 200
N_AGENTS = 50


def seed(rng: random.Random) -> dict:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from registry.models import Tool
    from registry.services.agents import agent_create
    from registry.services.grants import grant_create
    from registry.services.roles import role_create
    from registry.services.tokens import token_issue
    from registry.services.tools import tool_create

    User = get_user_model()
    admin = User.objects.create_superuser("bench-admin", "bench-admin@example.com", None)
    reviewer = User.objects.create_user(
        "bench-reviewer", "reviewer@example.com", None, is_staff=True
    )
    reviewer.user_permissions.add(Permission.objects.get(codename="review_all"))
    owners = [
        User.objects.create_user(f"owner-{i}", f"owner{i}@example.com", None, is_staff=True)
        for i in range(1, 7)
    ]
    for i in range(1, 4):  # they decide the approval-gated calls of the generator
        User.objects.create_user(f"approver-{i}", f"appr{i}@example.com", None, is_staff=True)
    roles = {
        name: role_create(actor=admin, name=name, description=f"{name} agents") for name in ROLES
    }
    types = ["http"] * 10 + ["database"] * 4 + ["mcp"] * 4 + ["python"] * 2
    tools = []
    for i in range(N_TOOLS):
        category = CATEGORIES[i % len(CATEGORIES)]
        kind = types[rng.randrange(len(types))]
        verb = VERBS[rng.randrange(len(VERBS))]
        name = f"{category}__{verb}_{i:03d}" if kind == "mcp" else f"{category}_{verb}_{i:03d}"
        risky = (verb in ("refund", "restart") and rng.random() < 0.3) or rng.random() < 0.01
        tool = tool_create(
            actor=admin,
            name=name,
            type=kind,
            description=f"{verb} in {category}",
            version=f"1.{rng.randrange(5)}.{rng.randrange(10)}",
            tool_metadata={
                "category": category,
                "risk": "high" if risky else "low",
                **({"cost_per_call": "0.002"} if rng.random() < 0.3 else {}),
            },
            requires_approval=risky,
            cache_ttl_seconds=300 if verb in ("lookup", "get") else 0,
        )
        tools.append(tool)
    by_category: dict[str, list] = {}
    for tool in tools:
        by_category.setdefault(tool.tool_metadata["category"], []).append(tool)
    for role_name, categories in ROLES.items():
        for category in categories:
            for tool in by_category.get(category, []):
                grant_create(actor=admin, role=roles[role_name], action="execute", tool=tool)
    agents = []
    role_names = list(ROLES)
    for i in range(N_AGENTS):
        role_name = role_names[i % len(role_names)]
        extra = [roles[role_names[(i + 2) % len(role_names)]].pk] if i % 7 == 0 else []
        agent = agent_create(
            actor=admin,
            name=f"{role_name}-bot-{i:02d}",
            owner=owners[i % len(owners)],
            role_ids=[roles[role_name].pk, *extra],
        )
        agents.append(agent)
    for owner in owners[:3]:
        owner.groups.add(roles[role_names[owners.index(owner)]])
    _token, raw = token_issue(actor=admin, user=reviewer, name="compliance-bench")
    # One deactivated tool, so refusals of kind tool_inactive have a target.
    Tool.objects.filter(pk=tools[-1].pk).update(is_active=False)
    return {"reviewer_token": raw}


# --------------------------------------------------------------------------- generator


def iso(us: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=us)).isoformat(timespec="microseconds")


def rand_uuid(getrandbits) -> str:
    h = "%032x" % getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


INPUT_TEMPLATES = {
    "http": '{"account_id":"ACC-%d","limit":%d}',
    "database": '{"customer_id":%d,"max_rows":%d}',
    "mcp": '{"query":"order %d","top_k":%d}',
    "python": '{"document_id":"doc-%d","sentences":%d}',
}
ERRORS = [  # (error_type, weight, message, upstream status)
    ("upstream_error", 40, "Upstream answered HTTP 502 Bad Gateway", 502),
    ("timeout", 25, "The tool did not answer within 30 s", None),
    ("connection_error", 15, "Connection refused by upstream", None),
    ("tool_error", 14, "ValueError: unknown account", None),
    ("worker_lost", 3, "The worker running this call stopped", None),
    ("egress_denied", 2, "Destination 10.0.0.5 is not allowed", None),
    ("read_only_violation", 1, "A write was attempted on a read-only database", None),
]
DENIALS = [
    ("permission_denied", 50, "You may not execute this tool."),
    ("rate_limited", 42, "Rate limit of 100 calls per 60 s reached."),
    ("tool_not_found", 5, "Tool not found."),
    ("tool_inactive", 3, "This tool is deactivated."),
]
EXEC_COLUMNS = [
    "id",
    "tool_id",
    "tool_name",
    "tool_version",
    "tool_type",
    "requested_tool",
    "agent_id",
    "principal_id",
    "principal_name",
    "role_id",
    "roles_used",
    "status",
    "reason_code",
    "input_data",
    "raw_input",
    "input_hash",
    "sealed_secrets",
    "output_data",
    "output_truncated",
    "output_size",
    "output_artifact",
    "error_type",
    "error_message",
    "upstream_status",
    "attempts",
    "created_at",
    "queued_at",
    "started_at",
    "finished_at",
    "deadline_at",
    "execution_time_ms",
    "chars_in",
    "chars_out",
    "cost",
    "cached_from_id",
    "heartbeat_at",
    "request_id",
    "client_address",
    "worker",
]
AUDIT_COLUMNS = [
    "id",
    "occurred_at",
    "actor_id",
    "actor_name",
    "action",
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "request_id",
    "client_address",
    "sequence",
    "prev_hash",
    "hash",
    "sealed_at",
]
APPROVAL_COLUMNS = [
    "id",
    "execution_id",
    "input_hash",
    "status",
    "requested_at",
    "expires_at",
    "decided_by_id",
    "decided_by_name",
    "decided_at",
    "reason",
]
N = "\\N"


def weighted(rng, items, weight_index=1):
    total = sum(item[weight_index] for item in items)
    cum, acc = [], 0
    for item in items:
        acc += item[weight_index]
        cum.append(acc / total)

    def pick():
        r = rng.random()
        for item, edge in zip(items, cum, strict=True):
            if r <= edge:
                return item
        return items[-1]

    return pick


class Generator:
    """Produces executions, their audit events (sealed) and approvals, in time order."""

    def __init__(self, *, rng, n, start_us, end_us, catalog, first_id, first_sequence, prev_hash):
        from registry.services.audit_chain import event_hash

        self.event_hash = event_hash
        self.rng = rng
        self.n = n
        self.start_us, self.end_us = start_us, end_us
        self.avg_gap = (end_us - start_us) / n
        self.catalog = catalog
        self.next_id = first_id
        self.sequence = first_sequence
        self.prev = prev_hash
        self.pending: list = []  # heap of (time, tiebreak, event args)
        self.tiebreak = 0
        self.hash_seconds = 0.0
        self.events = 0
        self.approvals: list[str] = []
        self.last_success_by_tool: dict[str, str] = {}
        self.pick_error = weighted(rng, ERRORS)
        self.pick_denial = weighted(rng, DENIALS)
        self.index = 0

    # audit ------------------------------------------------------------------
    def _emit(
        self,
        out,
        occ_us,
        actor_id,
        actor_name,
        action,
        target_id,
        target_repr,
        after,
        request_id,
        client_address,
    ):
        self.sequence += 1
        event_id = self.next_id
        self.next_id += 1
        occurred = iso(occ_us)
        row = {
            "id": event_id,
            "occurred_at": occurred,
            "actor_name": actor_name,
            "action": action,
            "target_type": "executions.execution",
            "target_id": target_id,
            "target_repr": target_repr,
            "before": None,
            "after": after,
            "request_id": request_id,
            "client_address": client_address,
        }
        t0 = time.perf_counter()
        digest = self.event_hash(self.prev, row, self.sequence)
        self.hash_seconds += time.perf_counter() - t0
        out.append(
            f"{event_id}\t{occurred}\t{actor_id if actor_id else N}\t{actor_name}\t{action}\t"
            f"executions.execution\t{target_id}\t{target_repr}\t{N}\t"
            f"{json.dumps(after, separators=(',', ':'))}\t{request_id}\t"
            f"{client_address or N}\t{self.sequence}\t{self.prev}\t{digest}\t"
            f"{iso(occ_us + 1_000_000 + (event_id % 997) * 1000)}\n"
        )
        self.prev = digest
        self.events += 1

    def _later(self, occ_us, *args):
        self.tiebreak += 1
        heapq.heappush(self.pending, (occ_us, self.tiebreak, args))

    def _flush_until(self, out, until_us):
        pending = self.pending
        while pending and pending[0][0] <= until_us:
            occ_us, _, args = heapq.heappop(pending)
            self._emit(out, occ_us, *args)

    # executions -------------------------------------------------------------
    def chunk(self, count):
        """Generate ``count`` executions; returns (execution lines, audit lines)."""
        rng = self.rng
        rand = rng.random
        bits = rng.getrandbits
        cat = self.catalog
        tools, agents, humans, approvers = (
            cat["tools"],
            cat["agents"],
            cat["humans"],
            cat["approvers"],
        )
        ex_out: list[str] = []
        au_out: list[str] = []
        end_us = self.end_us
        for _ in range(count):
            t = self.start_us + int((self.index + rand()) * self.avg_gap)
            self.index += 1
            self._flush_until(au_out, t)
            eid = rand_uuid(bits)
            request_id = "%032x" % bits(128)
            # caller: 96 % agents (skewed), 4 % people through the admin's test run
            if rand() < 0.96:
                agent = (
                    agents[min(int(rng.paretovariate(1.2)) - 1, len(agents) - 1)]
                    if rand() < 0.5
                    else agents[int(rand() * len(agents))]
                )
                principal_id, principal_name, roles_json, roles = (
                    agent["user_id"],
                    agent["username"],
                    agent["roles_json"],
                    agent["roles"],
                )
                agent_id = agent["id"]
                tool_pool = agent["tools"]
                client = agent["ip"]
            else:
                human = humans[int(rand() * len(humans))]
                principal_id, principal_name, roles_json, roles = (
                    human["user_id"],
                    human["username"],
                    human["roles_json"],
                    human["roles"],
                )
                agent_id = None
                tool_pool = human["tools"] or tools
                client = "192.168.10.%d" % (1 + int(rand() * 200))
            # tool: Zipf-like inside the caller's pool
            idx = (
                min(int(rng.paretovariate(1.1)) - 1, len(tool_pool) - 1)
                if rand() < 0.7
                else int(rand() * len(tool_pool))
            )
            tool = tool_pool[idx]
            role_id = N
            if rand() < 0.1 and roles:
                role_id = cat["role_ids"][roles[0]]
            a = 1 + int(rand() * 99999)
            b = 1 + int(rand() * 50)
            input_json = INPUT_TEMPLATES[tool["type"]] % (a, b)
            ih = hashlib.sha256(input_json.encode()).hexdigest()
            tool_id, tool_name, tool_version, tool_type = (
                tool["id"],
                tool["name"],
                tool["version"],
                tool["type"],
            )
            requested = tool_name
            target_repr = f"{tool_name} by {principal_name}"
            r = rand()
            reason = error_type = error_message = raw_input = ""
            output = N
            upstream = N
            attempts = 0
            queued_at = started_at = finished_at = deadline_at = N
            exec_ms = N
            chars_out = 0
            output_size = N
            cached_from = N
            worker = ""
            cost = tool["cost"]
            events_now: list[
                tuple
            ] = []  # (time, actor_id, actor_name, action, after-status, attempts, error_type, reason)
            if r < 0.065:  # refused at admission
                denial = self.pick_denial()
                reason, _, error_message = denial
                status = "denied"
                if reason == "tool_not_found":
                    tool_id = N
                    tool_name = tool_version = tool_type = ""
                    requested = f"{tool['name'][:-4]}_{int(rand() * 900) + 100}x"
                    target_repr = f"{requested} by {principal_name}"
                    input_json = N
                    ih = ""
                elif reason == "tool_inactive":
                    inactive = cat["inactive"]
                    tool_id, tool_name, tool_version, tool_type = (
                        inactive["id"],
                        inactive["name"],
                        inactive["version"],
                        inactive["type"],
                    )
                    requested = tool_name
                    target_repr = f"{tool_name} by {principal_name}"
                cost = N
                finished_at = iso(t)
                events_now.append(
                    (t, principal_id, principal_name, "execution.denied", status, 0, "", reason)
                )
            elif r < 0.105:  # invalid arguments
                status, reason = "invalid", "invalid_arguments"
                if rand() < 0.15:
                    raw_input = '{"account_id": ACC-%d' % a
                    input_json = N
                    ih = ""
                    error_message = (
                        "$: the arguments are not valid JSON (Expecting value at line 1)"
                    )
                else:
                    error_message = "$.limit: 'many' is not of type 'integer'"
                cost = N
                finished_at = iso(t)
                events_now.append(
                    (t, principal_id, principal_name, "execution.invalid", status, 0, "", reason)
                )
            elif tool["cached"] and rand() < 0.3 and tool["id"] in self.last_success_by_tool:
                status = "succeeded"
                cached_from = self.last_success_by_tool[tool["id"]]
                output = '{"status_code":200,"body":{"items":%d,"total":%d.%02d,"next":null}}' % (
                    b,
                    a,
                    b,
                )
                chars_out = output_size = len(output)
                started_at = finished_at = iso(t)
                exec_ms = "0"
                events_now.append(
                    (t, principal_id, principal_name, "execution.succeeded", status, 0, "", "")
                )
            else:  # admitted
                latency_ms = rng.lognormvariate(5.0, 0.9)
                if tool["approval"]:
                    decide = t + int((30 + rand() * 1800) * 1_000_000)
                    appr = approvers[int(rand() * len(approvers))]
                    d = rand()
                    if decide > end_us:
                        status = "pending_approval"
                        self.approvals.append(self._approval(eid, ih, "pending", t, None, None))
                    elif d < 0.85:
                        approve_rid = "%032x" % bits(128)
                        queued_us = decide
                        done = queued_us + int(latency_ms * 1000) + 50_000
                        self.approvals.append(self._approval(eid, ih, "approved", t, appr, decide))
                        self._later(
                            decide,
                            appr["user_id"],
                            appr["username"],
                            "execution.queued",
                            eid,
                            target_repr,
                            self._summary(
                                eid,
                                tool_name,
                                tool_version,
                                agent_id,
                                principal_name,
                                roles,
                                "queued",
                                "",
                                "",
                                ih,
                                0,
                            ),
                            approve_rid,
                            "192.168.1.%d" % (10 + int(rand() * 3)),
                        )
                        queued_at = iso(queued_us)
                        deadline_at = iso(queued_us + 300_000_000)
                        if done > end_us:
                            status = "queued"
                        else:
                            status, error_type, error_message, upstream, attempts = self._outcome()
                            started_at = iso(queued_us + 20_000)
                            finished_at = iso(done)
                            exec_ms = "%.3f" % latency_ms
                            worker = "celery@worker-%d" % (1 + int(rand() * 4))
                            self._later(
                                done,
                                principal_id,
                                principal_name,
                                f"execution.{status}",
                                eid,
                                target_repr,
                                self._summary(
                                    eid,
                                    tool_name,
                                    tool_version,
                                    agent_id,
                                    principal_name,
                                    roles,
                                    status,
                                    "",
                                    error_type,
                                    ih,
                                    attempts,
                                ),
                                request_id,
                                None,
                            )
                    elif d < 0.95:
                        status, error_type, error_message = (
                            "rejected",
                            "rejected",
                            "Rejected: not during a change freeze",
                        )
                        finished_at = iso(decide)
                        self.approvals.append(self._approval(eid, ih, "rejected", t, appr, decide))
                        self._later(
                            decide,
                            appr["user_id"],
                            appr["username"],
                            "execution.rejected",
                            eid,
                            target_repr,
                            self._summary(
                                eid,
                                tool_name,
                                tool_version,
                                agent_id,
                                principal_name,
                                roles,
                                status,
                                "",
                                error_type,
                                ih,
                                0,
                            ),
                            "%032x" % bits(128),
                            "192.168.1.11",
                        )
                    else:
                        expire = t + 3_600_000_000
                        if expire > end_us:
                            status = "pending_approval"
                            self.approvals.append(self._approval(eid, ih, "pending", t, None, None))
                        else:
                            status, error_type, error_message = (
                                "expired",
                                "approval_expired",
                                "Nobody decided in time",
                            )
                            finished_at = iso(expire)
                            self.approvals.append(
                                self._approval(eid, ih, "expired", t, None, expire)
                            )
                            self._later(
                                expire,
                                None,
                                "system",
                                "execution.expired",
                                eid,
                                target_repr,
                                self._summary(
                                    eid,
                                    tool_name,
                                    tool_version,
                                    agent_id,
                                    principal_name,
                                    roles,
                                    status,
                                    "",
                                    error_type,
                                    ih,
                                    0,
                                ),
                                f"task-{eid}",
                                None,
                            )
                    events_now.append(
                        (
                            t,
                            principal_id,
                            principal_name,
                            "execution.pending_approval",
                            "pending_approval",
                            0,
                            "",
                            "",
                        )
                    )
                else:
                    queued_at = iso(t)
                    deadline_at = iso(t + 300_000_000)
                    done = t + int(latency_ms * 1000) + 30_000
                    events_now.append(
                        (t, principal_id, principal_name, "execution.queued", "queued", 0, "", "")
                    )
                    if done > end_us:
                        status = "running" if rand() < 0.5 else "queued"
                        if status == "running":
                            started_at = iso(t + 20_000)
                            attempts = 1
                    elif rand() < 0.003:
                        status, error_type = "cancelled", ""
                        finished_at = iso(t + 5_000)
                        self._later(
                            t + 5_000,
                            principal_id,
                            principal_name,
                            "execution.cancelled",
                            eid,
                            target_repr,
                            self._summary(
                                eid,
                                tool_name,
                                tool_version,
                                agent_id,
                                principal_name,
                                roles,
                                status,
                                "",
                                "",
                                ih,
                                0,
                            ),
                            "%032x" % bits(128),
                            client,
                        )
                    else:
                        status, error_type, error_message, upstream, attempts = self._outcome()
                        started_at = iso(t + 20_000)
                        finished_at = iso(done)
                        exec_ms = "%.3f" % latency_ms
                        worker = "celery@worker-%d" % (1 + int(rand() * 4))
                        self._later(
                            done,
                            principal_id,
                            principal_name,
                            f"execution.{status}",
                            eid,
                            target_repr,
                            self._summary(
                                eid,
                                tool_name,
                                tool_version,
                                agent_id,
                                principal_name,
                                roles,
                                status,
                                "",
                                error_type,
                                ih,
                                attempts,
                            ),
                            request_id,
                            None,
                        )
                if status == "succeeded":
                    output = (
                        '{"status_code":200,"body":{"items":%d,"total":%d.%02d,"next":null}}'
                        % (b, a, b)
                    )
                    chars_out = output_size = len(output)
                    self.last_success_by_tool[tool["id"]] = eid
            for occ, actor_id, actor_name, action, st, att, et, rc in events_now:
                self._emit(
                    au_out,
                    occ,
                    actor_id,
                    actor_name,
                    action,
                    eid,
                    target_repr,
                    self._summary(
                        eid,
                        tool_name or requested,
                        tool_version,
                        agent_id,
                        principal_name,
                        roles,
                        st,
                        rc,
                        et,
                        ih,
                        att,
                    ),
                    request_id,
                    client,
                )
            chars_in = len(input_json) if input_json != N else len(raw_input)
            ex_out.append(
                f"{eid}\t{tool_id}\t{tool_name}\t{tool_version}\t{tool_type}\t{requested}\t"
                f"{agent_id or N}\t{principal_id}\t{principal_name}\t{role_id}\t{roles_json}\t"
                f"{status}\t{reason}\t{input_json}\t{raw_input}\t{ih}\t\t{output}\tf\t{output_size}\t\t"
                f"{error_type}\t{error_message}\t{upstream}\t{attempts}\t{iso(t)}\t{queued_at}\t"
                f"{started_at}\t{finished_at}\t{deadline_at}\t{exec_ms}\t{chars_in}\t{chars_out}\t"
                f"{cost}\t{cached_from}\t{N}\t{request_id}\t{client}\t{worker}\n"
            )
        return ex_out, au_out

    def finish(self):
        out: list[str] = []
        self._flush_until(out, self.end_us)
        assert not self.pending, "an event was scheduled after the end of the window"
        return out

    def _outcome(self):
        if self.rng.random() < 0.93:
            return "succeeded", "", "", 200, 1
        error_type, _, message, upstream = self.pick_error()
        return (
            "failed",
            error_type,
            message,
            upstream if upstream else N,
            1 + int(self.rng.random() * 3),
        )

    @staticmethod
    def _summary(
        eid, tool, version, agent_id, principal, roles, status, reason, error_type, ih, attempts
    ):
        return {
            "execution_id": eid,
            "tool": tool,
            "tool_version": version,
            "agent_id": agent_id,
            "principal": principal,
            "roles": roles,
            "status": status,
            "reason_code": reason,
            "error_type": error_type,
            "input_hash": ih,
            "attempts": attempts,
            "content_hash": "%064x" % random.getrandbits(256),
        }

    def _approval(self, eid, ih, status, requested_us, approver, decided_us):
        aid = rand_uuid(self.rng.getrandbits)
        decided_by = approver["user_id"] if approver and status in ("approved", "rejected") else N
        decided_name = (
            approver["username"] if approver and status in ("approved", "rejected") else ""
        )
        decided = iso(decided_us) if decided_us and status != "pending" else N
        reason = "Change freeze" if status == "rejected" else ("ok" if status == "approved" else "")
        return (
            f"{aid}\t{eid}\t{ih}\t{status}\t{iso(requested_us)}\t{iso(requested_us + 3_600_000_000)}\t"
            f"{decided_by}\t{decided_name}\t{decided}\t{reason}\n"
        )


def load_catalog(rng) -> dict:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from registry.models import Agent, Tool
    from registry.models.grants import ToolGrant

    User = get_user_model()
    tools_all = {}
    for t in Tool.objects.all():
        tools_all[t.pk] = {
            "id": str(t.pk),
            "name": t.name,
            "version": t.version,
            "type": t.type,
            "approval": t.requires_approval,
            "cached": t.cache_ttl_seconds > 0,
            "active": t.is_active,
            "cost": (t.tool_metadata or {}).get("cost_per_call") or N,
        }
    grants: dict[int, list] = {}
    for g in ToolGrant.objects.filter(tool__isnull=False, tool__is_active=True):
        grants.setdefault(g.role_id, []).append(tools_all[g.tool_id])
    role_ids = {g.name: g.pk for g in Group.objects.all()}

    def principal(user, **extra):
        roles = sorted(user.groups.values_list("name", flat=True))
        pool = []
        for name in roles:
            pool.extend(grants.get(role_ids[name], []))
        pool = sorted({t["id"]: t for t in pool}.values(), key=lambda t: t["name"])
        rng.shuffle(pool)  # which tools are hot differs per caller
        return {
            "user_id": user.pk,
            "username": user.username,
            "roles": roles,
            "roles_json": json.dumps(roles),
            "tools": pool,
            **extra,
        }

    agents = [
        principal(a.user, id=str(a.pk), ip=f"10.20.{i // 250}.{i % 250 + 1}")
        for i, a in enumerate(Agent.objects.select_related("user").order_by("name"))
    ]
    humans = [principal(u) for u in User.objects.filter(username__startswith="owner-")]
    approvers = [
        {"user_id": u.pk, "username": u.username}
        for u in User.objects.filter(username__startswith="approver-")
    ]
    inactive = next(t for t in tools_all.values() if not t["active"])
    return {
        "tools": [t for t in tools_all.values() if t["active"]],
        "agents": agents,
        "humans": humans,
        "approvers": approvers,
        "role_ids": role_ids,
        "inactive": inactive,
    }


# --------------------------------------------------------------------------- fill


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
    from django.core.management import call_command
    from psycopg.copy import QueuedLibpqWriter

    from registry.models import AuditChainHead

    rng = random.Random(20240601)
    random.seed(20240602)
    stats: dict = {"executions": n, "started": dt.datetime.now(dt.UTC).isoformat()}
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    stats["migrate_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    seeded = seed(rng)
    from registry.services.audit_chain import audit_seal_all

    audit_seal_all(grace=dt.timedelta(0))
    stats["seed_s"] = round(time.perf_counter() - t0, 1)
    catalog = load_catalog(rng)
    head = AuditChainHead.objects.get(pk=1)
    from django.db import connection

    connection.close()

    end_us = int((time.time() - 120) * 1_000_000)
    start_us = end_us - 365 * 86400 * 1_000_000
    with pg_connect(DB_NAME) as ctl:
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
    print(
        f"seeded {len(catalog['tools'])} tools, {len(catalog['agents'])} agents, "
        f"{seeded_events} governance events; dropped {len(ddl['constraints'])} constraints and "
        f"{len(ddl['indexes'])} indexes",
        flush=True,
    )

    gen = Generator(
        rng=rng,
        n=n,
        start_us=start_us,
        end_us=end_us,
        catalog=catalog,
        first_id=first_id,
        first_sequence=head.sequence,
        prev_hash=head.hash,
    )
    ex_conn = pg_connect(DB_NAME)
    au_conn = pg_connect(DB_NAME)
    for c in (ex_conn, au_conn):
        c.execute("SET synchronous_commit = off")
    ex_conn.execute("TRUNCATE executions_approval, executions_execution")
    au_conn.execute("TRUNCATE registry_auditevent")
    t_load = time.perf_counter()
    gen_seconds = 0.0
    bytes_ex = bytes_au = 0
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
        au_copy.write(bytes(seed_rows))
        done = 0
        next_report = 500_000
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
                next_report += 500_000
                el = time.perf_counter() - t_load
                print(
                    f"  {done:>11,} executions, {gen.events:>11,} events  {el:7.0f} s  "
                    f"{done / el:8.0f} exec/s  (generator {gen_seconds:.0f} s, of which event_hash "
                    f"{gen.hash_seconds:.0f} s)",
                    flush=True,
                )
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
    stats.update(
        load_copy_s=round(load_s, 1),
        copy_stream_s=round(t_copy_done - t_load, 1),
        generator_s=round(gen_seconds, 1),
        event_hash_s=round(gen.hash_seconds, 1),
        audit_events=gen.events + seeded_events,
        execution_audit_events=gen.events,
        approvals=len(gen.approvals),
        copy_mb_executions=round(bytes_ex / 1e6),
        copy_mb_audit=round(bytes_au / 1e6),
        window={"start": iso(start_us), "end": iso(end_us)},
    )
    print(f"COPY done in {load_s:.0f} s; rebuilding constraints and indexes", flush=True)
    with pg_connect(DB_NAME) as ctl:
        t0 = time.perf_counter()
        stats["index_builds"] = rebuild_ddl(ctl, ddl)
        stats["index_s"] = round(time.perf_counter() - t0, 1)
        # the chain head and the id sequence, as the sealer would have left them
        ctl.execute(
            "UPDATE registry_auditchainhead SET sequence = %s, hash = %s, updated_at = now() WHERE id = 1",
            (gen.sequence, gen.prev),
        )
        ctl.execute(
            "SELECT setval(pg_get_serial_sequence('registry_auditevent', 'id'), %s)",
            (gen.next_id - 1,),
        )
        ctl.commit()
    with pg_connect(DB_NAME, autocommit=True) as ctl:
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
    print(json.dumps(stats, indent=1), flush=True)


# --------------------------------------------------------------------------- measurement


class RSSSampler:
    """Peak resident memory of this process while a block runs (sampled every 5 ms)."""

    def __enter__(self):
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.base = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _rss(self):
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self.page

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def growth_mb(self):
        return (self.peak - self.base) / 1e6


class Bench:
    def __init__(self, only: str | None):
        from django.db import connection
        from django.test import Client

        self.connection = connection
        self.Client = Client
        self.only = re.compile(only) if only else None
        self.rows: list[dict] = []
        self.explained: dict[str, str] = {}

    def run(self, group, label, fn, *, runs=4, budget_s=90.0, expect=(200,)):
        from django.test.utils import CaptureQueriesContext

        if self.only and not self.only.search(f"{group} {label}"):
            return None
        times, captured, info = [], None, {}
        for i in range(runs + 1):
            with CaptureQueriesContext(self.connection) as cq:
                t0 = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - t0
            if isinstance(result, dict) and "elapsed_s" in result:
                elapsed = result.pop("elapsed_s")  # the case timed itself (exports)
            status = (
                result.pop("status_code", 200) if isinstance(result, dict) else result.status_code
            )
            if status not in expect:
                if status in (301, 302):
                    info["error"] = f"HTTP {status} -> {result['Location']}"
                else:
                    body = (
                        b""
                        if getattr(result, "streaming", False)
                        else getattr(result, "content", b"")
                    )
                    info["error"] = f"HTTP {status} {body[:300]!r}"
            elif (
                not isinstance(result, dict)
                and not result.streaming
                and b'id="result_list"' in result.content
            ):
                table = re.search(rb'id="result_list".*?</table>', result.content, re.S)
                info["rows_shown"] = table.group(0).count(b"<tr") - 1 if table else None
            if isinstance(result, dict):
                info.update(result)
            times.append(elapsed)
            captured = list(cq.captured_queries)
            if sum(times) > budget_s and i >= 1:
                break
        warm = times[1:] or times
        queries = [q for q in captured if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
        slow = max(queries, key=lambda q: float(q["time"]), default=None)
        row = {
            "group": group,
            "case": label,
            "first_ms": round(times[0] * 1000, 1),
            "median_ms": round(statistics.median(warm) * 1000, 1),
            "runs": len(times),
            "queries": len(queries),
            "slowest_ms": round(float(slow["time"]) * 1000, 1) if slow else None,
            "slowest_sql": slow["sql"][:600] if slow else None,
            **info,
        }
        for q in queries:
            if float(q["time"]) * 1000 >= SLOW_MS:
                self.explain(q["sql"])
        if slow and float(slow["time"]) * 1000 >= SLOW_MS:
            row["explain_key"] = self._key(slow["sql"])
        self.rows.append(row)
        print(
            f"{group:10s} {label:58s} first {row['first_ms']:9.1f} ms  median {row['median_ms']:9.1f} ms  "
            f"{row['queries']:3d} q  slowest {row['slowest_ms']} ms  rows {info.get('rows_shown', '-')} "
            f"{info.get('note', '')} {info.get('error', '')}",
            flush=True,
        )
        return row

    @staticmethod
    def _key(sql):
        return hashlib.sha256(re.sub(r"'[^']*'|\b\d+\b", "?", sql).encode()).hexdigest()[:10]

    def explain(self, sql):
        key = self._key(sql)
        # a server-side cursor (iterator()) is logged as DECLARE ... FOR SELECT: explain the SELECT
        sql = re.sub(r"^DECLARE .*? CURSOR (WITH(OUT)? HOLD )?FOR ", "", sql.lstrip())
        if key in self.explained or not sql.upper().startswith("SELECT"):
            return
        with self.connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plan = "\n".join(r[0] for r in cur.fetchall())
        self.explained[key] = {"sql": sql, "plan": plan}


def quarter_bounds(now):
    """The previous calendar quarter (what the admin's 'Last quarter' means), in UTC."""
    start_this = now.replace(
        month=3 * ((now.month - 1) // 3) + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )
    if start_this.month == 1:
        return start_this.replace(year=start_this.year - 1, month=10), start_this
    return start_this.replace(month=start_this.month - 3), start_this


def admin_cases(model_admin, samples: dict, request) -> list[tuple[str, dict]]:
    """One case per value of each filter the admin class offers (read from its list_filter)."""
    from django.contrib import admin
    from django.db import models

    try:
        from registry.admin.mixins import InputFilter, TimeRangeFilter
    except ImportError:  # older admin code
        InputFilter = TimeRangeFilter = ()

    model = model_admin.model
    cases: list[tuple[str, dict]] = [
        ("no filter", {}),
        ("page 2", {"p": 2}),
        ("page 200 (offset 9,950)", {"p": 200}),
        ("page 2,000 (offset 99,950)", {"p": 2000}),
    ]
    now = dt.datetime.now(dt.UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for spec in model_admin.list_filter:
        if isinstance(spec, tuple | list):
            spec = spec[0]
        if isinstance(spec, str):
            field = model._meta.get_field(spec)
            if isinstance(field, models.DateTimeField | models.DateField):
                tomorrow = today + dt.timedelta(days=1)
                month = today.replace(day=1)
                year = today.replace(month=1, day=1)
                for label, since, until in (
                    ("today", today, tomorrow),
                    ("past 7 days", today - dt.timedelta(days=7), tomorrow),
                    ("this month", month, (month + dt.timedelta(days=32)).replace(day=1)),
                    ("this year", year, year.replace(year=year.year + 1)),
                ):
                    cases.append(
                        (
                            f"{spec}: {label}",
                            {f"{spec}__gte": str(since), f"{spec}__lt": str(until)},
                        )
                    )
            else:
                for value in samples.get(spec, [c[0] for c in field.choices or []][:3]):
                    cases.append((f"{spec}={value}", {f"{spec}__exact": value}))
        elif TimeRangeFilter and issubclass(spec, TimeRangeFilter):
            for key, _label in spec.PERIODS:
                cases.append((f"{spec.parameter_name}={key}", {spec.parameter_name: key}))
            day = (today - dt.timedelta(days=180)).date()
            cases.append(
                (
                    f"{spec.parameter_name}_from/_to one day 6 months ago",
                    {
                        f"{spec.parameter_name}_from": str(day),
                        f"{spec.parameter_name}_to": str(day),
                    },
                )
            )
        elif InputFilter and issubclass(spec, InputFilter):
            for value in samples.get(spec.parameter_name, []):
                cases.append((f"{spec.parameter_name}={value}", {spec.parameter_name: value}))
            for value, _label in spec.lookups(spec, request, model_admin) or []:
                if value not in samples.get(spec.parameter_name, []):
                    cases.append(
                        (
                            f"{spec.parameter_name}={value} (quick link)",
                            {spec.parameter_name: value},
                        )
                    )
        elif issubclass(spec, admin.SimpleListFilter):
            instance = spec(request, {}, model, model_admin)
            for value, _label in instance.lookup_choices:
                cases.append((f"{spec.parameter_name}={value}", {spec.parameter_name: value}))
    if model_admin.date_hierarchy:
        field = model_admin.date_hierarchy
        cases += [
            ("date_hierarchy year", {f"{field}__year": now.year}),
            (
                "date_hierarchy year+month",
                {f"{field}__year": now.year, f"{field}__month": now.month},
            ),
            (
                "date_hierarchy day",
                {
                    f"{field}__year": now.year,
                    f"{field}__month": now.month,
                    f"{field}__day": now.day,
                },
            ),
        ]
    return cases


def bench(args) -> None:
    import django

    django.setup()
    from urllib.parse import urlencode

    from django.conf import settings
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import RequestFactory

    from executions.models import Execution
    from registry.models import Agent, AuditEvent, Tool

    if not (Path(STATIC_ROOT) / "staticfiles.json").exists():
        call_command("collectstatic", interactive=False, verbosity=0)
    # Migrations added since the fill (e.g. new indexes) are applied first, and timed.
    from django.db.migrations.executor import MigrationExecutor

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
    with pg_connect(DB_NAME) as ctl:
        fill_stats = meta_get(ctl, "fill", {})
        seeded = meta_get(ctl, "seed", {})
        ctl.commit()
    User = get_user_model()
    admin_user = User.objects.get(username="bench-admin")
    b = Bench(args.only)
    client = b.Client()
    client.force_login(admin_user)
    reviewer_client = b.Client(HTTP_AUTHORIZATION=f"Bearer {seeded.get('reviewer_token', '')}")
    request = RequestFactory().get("/")
    request.user = admin_user

    def get(url, c=None):
        def fn():
            response = (c or client).get(url)
            if getattr(response, "streaming", False):
                for _ in response.streaming_content:
                    pass
            else:
                _ = response.content
            return response

        return fn

    now = dt.datetime.now(dt.UTC)
    q_start, q_end = quarter_bounds(now)

    # sample targets ---------------------------------------------------------------------------
    mid = (
        Execution.objects.filter(
            created_at__lt=now - dt.timedelta(days=180), tool__isnull=False, agent__isnull=False
        )
        .order_by("-created_at")
        .values("id", "request_id", "tool_id", "agent_id", "tool_name", "principal_name")
        .first()
    )
    ev = (
        AuditEvent.objects.filter(target_type="executions.execution", target_id=str(mid["id"]))
        .order_by("id")
        .values("id", "sequence", "request_id", "actor_name")
        .first()
    )
    with connection.cursor() as cur:
        cur.execute(
            "SELECT tool_id, agent_id, count(*) FROM executions_execution "
            "WHERE created_at >= %s AND created_at < %s AND agent_id IS NOT NULL AND tool_id IS NOT NULL "
            "GROUP BY 1, 2 ORDER BY 3 DESC",
            [q_start, q_end],
        )
        pairs = cur.fetchall()
    busy, quiet = pairs[0], pairs[len(pairs) * 3 // 4]
    tool_names = dict(Tool.objects.values_list("id", "name"))
    agent_names = dict(Agent.objects.values_list("id", "name"))
    agent_users = dict(Agent.objects.values_list("id", "user__username"))
    rare_tool = (
        Execution.objects.filter(created_at__gte=now - dt.timedelta(days=30), tool__isnull=False)
        .values_list("tool_id", flat=True)
        .order_by("created_at")
        .first()
    )

    # warm-up: templates compiled, URLconf and admin loaded (so "first" is about the database)
    for url in (
        "/admin/",
        "/admin/executions/execution/?q=warm-up",
        "/admin/registry/auditevent/?q=warm-up",
        "/api/v1/executions?page_size=1",
    ):
        client.get(url)

    # 1. admin changelists ----------------------------------------------------------------------
    exec_admin = admin.site._registry[Execution]
    audit_admin = admin.site._registry[AuditEvent]
    exec_samples = {
        "status": ["succeeded", "failed", "expired", "pending_approval"],
        "tool_type": ["http", "python"],
        "error_type": ["timeout", "read_only_violation"],
        "tool": [tool_names[busy[0]], str(busy[0])],
        "agent": [agent_names[busy[1]], str(busy[1])],
        "role": ["analyst"],
        "principal": [agent_users[busy[1]], "owner-1"],
    }
    audit_samples = {
        "action": ["execution.succeeded", "execution.expired", "tool.created", "grant.created"],
        "actor": [agent_users[busy[1]], "approver-1", "system", "bench-admin"],
    }
    base = "/admin/executions/execution/"
    cases = admin_cases(exec_admin, exec_samples, request)
    filter_names = {getattr(s, "parameter_name", s) for s in exec_admin.list_filter}
    if {"tool", "agent", "created"} <= filter_names:
        cases.append(
            (
                "tool X + agent Y + created=last_quarter (busy pair)",
                {
                    "tool": tool_names[busy[0]],
                    "agent": agent_names[busy[1]],
                    "created": "last_quarter",
                },
            )
        )
        cases.append(
            (
                "tool X + agent Y + created=last_quarter (quiet pair)",
                {
                    "tool": tool_names[quiet[0]],
                    "agent": agent_names[quiet[1]],
                    "created": "last_quarter",
                },
            )
        )
        cases.append(
            (
                "tool X + agent Y + last_quarter, page 20",
                {
                    "tool": tool_names[busy[0]],
                    "agent": agent_names[busy[1]],
                    "created": "last_quarter",
                    "p": 20,
                },
            )
        )
    if {"tool", "status"} <= filter_names:
        cases.append(
            ("status=failed + tool X", {"status__exact": "failed", "tool": tool_names[busy[0]]})
        )
        cases.append(
            (
                "status=expired + tool (recent, rare)",
                {"status__exact": "expired", "tool": str(rare_tool)},
            )
        )
    cases += [
        ("search: execution id", {"q": str(mid["id"])}),
        ("search: request id", {"q": mid["request_id"]}),
        ("search: tool name", {"q": mid["tool_name"]}),
        ("search: no match", {"q": "no-such-thing"}),
    ]
    for label, params in cases:
        b.run("admin exec", label, get(base + ("?" + urlencode(params) if params else "")))
    b.run("admin exec", "detail page", get(f"{base}{mid['id']}/change/"))

    base = "/admin/registry/auditevent/"
    cases = admin_cases(audit_admin, audit_samples, request)
    filter_names = {getattr(s, "parameter_name", s) for s in audit_admin.list_filter}
    if {"action", "actor", "occurred"} <= filter_names:
        cases.append(
            (
                "action=execution. + actor + occurred=last_quarter",
                {"action": "execution.", "actor": agent_users[busy[1]], "occurred": "last_quarter"},
            )
        )
    cases += [
        ("search: execution id (target_id)", {"q": str(mid["id"])}),
        ("search: request id", {"q": ev["request_id"]}),
        ("search: event id", {"q": str(ev["id"])}),
        ("search: no match", {"q": "no-such-thing"}),
        (
            "link from execution page: ?target_type&target_id",
            {"target_type": "executions.execution", "target_id": str(mid["id"])},
        ),
        ("link from event page: ?request_id", {"request_id": ev["request_id"]}),
    ]
    for label, params in cases:
        b.run("admin audit", label, get(base + ("?" + urlencode(params) if params else "")))
    b.run("admin audit", "detail page", get(f"{base}{ev['id']}/change/"))
    b.run("admin", "dashboard 7d", get("/admin/dashboard/?range=7d"), runs=2)
    b.run("admin", "dashboard 90d", get("/admin/dashboard/?range=90d"), runs=2)

    # 2. API cursor pages -----------------------------------------------------------------------
    api = "/api/v1/executions"
    b.run("api", "first page (page_size=50)", get(f"{api}?page_size=50"))
    b.run("api", "first page, reviewer bearer token", get(f"{api}?page_size=50", reviewer_client))

    def walk(url, pages, c=None):
        def fn():
            nxt, got, last_ms, rows = url, 0, 0.0, 0
            while nxt and got < pages:
                t0 = time.perf_counter()
                response = (c or client).get(nxt.replace("http://testserver", ""))
                last_ms = (time.perf_counter() - t0) * 1000
                body = response.json()
                rows += len(body["results"])
                nxt = body.get("next")
                got += 1
            return {
                "pages": got,
                "rows": rows,
                "last_page_ms": round(last_ms, 1),
                "note": f"{got} pages, {rows} rows, last page alone {last_ms:.1f} ms",
            }

        return fn

    b.run(
        "api",
        "100 pages following cursors (page_size=50)",
        walk(f"{api}?page_size=50", 100),
        runs=2,
    )
    filters = {
        "status=failed": {"status": "failed"},
        "status=expired": {"status": "expired"},
        "tool_id": {"tool_id": str(mid["tool_id"])},
        "agent_id": {"agent_id": str(mid["agent_id"])},
        "role=analyst": {"role": "analyst"},
        "created_after/before one day 6 months ago": {
            "created_after": (now - dt.timedelta(days=180)).isoformat(),
            "created_before": (now - dt.timedelta(days=179)).isoformat(),
        },
        "tool X + agent Y + last quarter (busy pair)": {
            "tool_id": str(busy[0]),
            "agent_id": str(busy[1]),
            "created_after": q_start.isoformat(),
            "created_before": q_end.isoformat(),
        },
        "tool X + agent Y + last quarter (quiet pair)": {
            "tool_id": str(quiet[0]),
            "agent_id": str(quiet[1]),
            "created_after": q_start.isoformat(),
            "created_before": q_end.isoformat(),
        },
        "status=expired + tool (recent, rare)": {"status": "expired", "tool_id": str(rare_tool)},
    }
    for label, params in filters.items():
        b.run("api", f"first page {label}", get(f"{api}?page_size=50&{urlencode(params)}"))
    for label, pair in (("busy", busy), ("quiet", quiet)):
        params = {
            "tool_id": str(pair[0]),
            "agent_id": str(pair[1]),
            "page_size": 200,
            "created_after": q_start.isoformat(),
            "created_before": q_end.isoformat(),
        }
        b.run(
            "api",
            f"ALL calls of tool X by agent Y last quarter ({label}: {pair[2]:,} rows, page_size=200)",
            walk(f"{api}?{urlencode(params)}", 100_000),
            runs=0 if pair[2] > 50_000 else 1,
        )
    audit_api = "/api/v1/audit"
    if any(
        "audit" == str(p.pattern)
        for p in __import__("registry.api.urls", fromlist=["x"]).urlpatterns
    ):
        b.run("api audit", "first page", get(f"{audit_api}?page_size=50"))
        b.run(
            "api audit",
            "100 pages following cursors",
            walk(f"{audit_api}?page_size=50", 100),
            runs=2,
        )
        for label, params in {
            "action=execution.expired": {"action": "execution.expired"},
            "action=tool.created": {"action": "tool.created"},
            "action=execution. (prefix)": {"action": "execution."},
            "actor (agent)": {"actor": agent_users[busy[1]]},
            "target_type+target_id (one execution)": {
                "target_type": "executions.execution",
                "target_id": str(mid["id"]),
            },
            "target_id only": {"target_id": str(mid["id"])},
            "request_id": {"request_id": ev["request_id"]},
            "occurred_after/before one day 6 months ago": {
                "occurred_after": (now - dt.timedelta(days=180)).isoformat(),
                "occurred_before": (now - dt.timedelta(days=179)).isoformat(),
            },
        }.items():
            b.run(
                "api audit",
                f"first page {label}",
                get(f"{audit_api}?page_size=50&{urlencode(params)}"),
            )

    # 3. exports --------------------------------------------------------------------------------
    cut = Execution.objects.order_by("-created_at").values_list("created_at", flat=True)[99_999]
    last_id = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    audit_cut = (
        AuditEvent.objects.filter(id=last_id - 99_999).values_list("occurred_at", flat=True).first()
    )

    def export_case(fmt, fn, heap=True):
        def measured():
            with RSSSampler() as rss:
                t0 = time.perf_counter()
                status, nbytes, nlines = fn()
                el = time.perf_counter() - t0
            rows = nlines - 1 if fmt == "csv" else nlines
            ttfb = first_byte.get("ms", 0.0)
            result = {
                "elapsed_s": el,
                "status_code": status,
                "rows": rows,
                "bytes": nbytes,
                "rss_growth_mb": round(rss.growth_mb, 1),
                "rows_per_s": round(rows / el),
                "first_byte_ms": round(ttfb),
                "note": f"{rows:,} rows, {nbytes / 1e6:.0f} MB, {rows / el:,.0f} rows/s, "
                f"first byte {ttfb:,.0f} ms, RSS +{rss.growth_mb:.0f} MB",
            }
            if heap and id(fn) not in heap_peak:  # once per case: tracemalloc is slow
                tracemalloc.start()
                fn()
                heap_peak[id(fn)] = tracemalloc.get_traced_memory()[1] / 1e6
                tracemalloc.stop()
            if heap:
                result["py_heap_peak_mb"] = round(heap_peak[id(fn)], 1)
                result["note"] += f", Python heap peak {heap_peak[id(fn)]:.1f} MB"
            return result

        return measured

    heap_peak: dict = {}
    first_byte: dict = {}

    def consume(url):
        def fn():
            t0 = time.perf_counter()
            response = client.get(url)
            nbytes = nlines = 0
            for piece in response.streaming_content if response.streaming else [response.content]:
                if not nbytes:
                    first_byte["ms"] = (time.perf_counter() - t0) * 1000
                nbytes += len(piece)
                nlines += piece.count(b"\n")
            return response.status_code, nbytes, nlines

        return fn

    exports = []
    for fmt in ("csv", "jsonl"):
        exports.append(
            (
                f"{fmt} executions 100k: GET /api/v1/executions/export",
                f"/api/v1/executions/export?{urlencode({'format': fmt, 'created_after': cut.isoformat()})}",
                fmt,
            )
        )
        exports.append(
            (
                f"{fmt} executions 100k: admin export of the filtered changelist",
                f"/admin/executions/execution/export/{fmt}/?{urlencode({'created_from': cut.isoformat()})}",
                fmt,
            )
        )
        exports.append(
            (
                f"{fmt} audit 100k: GET /api/v1/audit/export",
                f"/api/v1/audit/export?{urlencode({'format': fmt, 'occurred_after': audit_cut.isoformat()})}",
                fmt,
            )
        )
        exports.append(
            (
                f"{fmt} audit 100k: admin export of the filtered changelist",
                f"/admin/registry/auditevent/export/{fmt}/?{urlencode({'occurred_from': audit_cut.isoformat()})}",
                fmt,
            )
        )
    for label, url, fmt in exports:
        b.run("export", label, export_case(fmt, consume(url)), runs=2)
    # the whole last quarter of executions, to see a big export's memory stays flat
    b.run(
        "export",
        "jsonl executions, whole last quarter: GET /api/v1/executions/export",
        export_case(
            "jsonl",
            consume(
                f"/api/v1/executions/export?{urlencode({'format': 'jsonl', 'created_after': q_start.isoformat(), 'created_before': q_end.isoformat()})}"
            ),
        ),
        runs=0,
    )
    b.run(
        "export",
        "jsonl audit, whole last quarter: GET /api/v1/audit/export",
        export_case(
            "jsonl",
            consume(
                "/api/v1/audit/export?"
                + urlencode(
                    {
                        "format": "jsonl",
                        "occurred_after": q_start.isoformat(),
                        "occurred_before": q_end.isoformat(),
                    }
                )
            ),
            heap=False,
        ),
        runs=0,
    )
    b.run(
        "export",
        "jsonl: every call of tool X by agent Y last quarter (busy pair): GET /api/v1/executions/export",
        export_case(
            "jsonl",
            consume(
                "/api/v1/executions/export?"
                + urlencode(
                    {
                        "format": "jsonl",
                        "tool_id": str(busy[0]),
                        "agent_id": str(busy[1]),
                        "created_after": q_start.isoformat(),
                        "created_before": q_end.isoformat(),
                    }
                )
            ),
        ),
        runs=1,
    )

    # 4. audit_verify ---------------------------------------------------------------------------
    verify = {}
    if not b.only or b.only.search("verify"):
        from registry.services.audit_chain import _rows_from, audit_verify, event_hash

        head_seq = (
            AuditEvent.objects.order_by("-sequence").values_list("sequence", flat=True).first()
        )
        slice_n = 1_000_000
        start = max(head_seq - slice_n, 0)
        prev = (
            AuditEvent.objects.filter(sequence=start).values_list("hash", flat=True).first()
            if start
            else "0" * 64
        )
        t0 = time.perf_counter()
        checked = 0
        hash_s = 0.0
        for row in _rows_from(start):
            h0 = time.perf_counter()
            digest = event_hash(prev, row, row["sequence"])
            hash_s += time.perf_counter() - h0
            assert digest == row["hash"] and row["prev_hash"] == prev, (
                f"chain broken at {row['sequence']}"
            )
            prev = digest
            checked += 1
        el = time.perf_counter() - t0
        rate = checked / el
        verify["slice"] = {
            "events": checked,
            "seconds": round(el, 1),
            "events_per_s": round(rate),
            "event_hash_share": round(hash_s / el, 2),
            "estimated_full_s": round(head_seq / rate),
        }
        print(
            f"verify slice: last {checked:,} events in {el:.1f} s = {rate:,.0f} events/s "
            f"(event_hash {hash_s / el:.0%} of it); full chain estimated {head_seq / rate / 60:.1f} min",
            flush=True,
        )
        if head_seq / rate < 15 * 60 and not args.no_full_verify:
            with RSSSampler() as rss:
                t0 = time.perf_counter()
                report = audit_verify()
                el = time.perf_counter() - t0
            verify["full"] = {
                "ok": report.ok,
                "checked": report.checked,
                "seconds": round(el, 1),
                "events_per_s": round(report.checked / el),
                "rss_growth_mb": round(rss.growth_mb, 1),
                "problem": report.problem and report.problem.message,
                "warnings": report.warnings,
            }
            print(
                f"audit_verify (full): ok={report.ok} checked {report.checked:,} in {el:.0f} s = "
                f"{report.checked / el:,.0f} events/s, RSS +{rss.growth_mb:.0f} MB",
                flush=True,
            )

    git = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "HEAD", "--stat"], capture_output=True, text=True
    ).stdout
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout
    results = {
        "machine": machine_info(),
        "code": {"head": head.strip(), "uncommitted": git.strip().splitlines()[-1:] if git else []},
        "fill": fill_stats,
        "migrations_applied_before_measuring": migrations_applied,
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "measured_at": dt.datetime.now(dt.UTC).isoformat(),
        "samples": {
            "busy_pair": [tool_names[busy[0]], agent_names[busy[1]], busy[2]],
            "quiet_pair": [tool_names[quiet[0]], agent_names[quiet[1]], quiet[2]],
            "last_quarter": [q_start.isoformat(), q_end.isoformat()],
        },
        "admin_filters": {
            "executions": [getattr(s, "__name__", s) for s in exec_admin.list_filter],
            "audit": [getattr(s, "__name__", s) for s in audit_admin.list_filter],
        },
        "rows": b.rows,
        "verify": verify,
        "explain": b.explained,
        "settings_debug": settings.DEBUG,
    }
    if args.only and RESULTS_PATH.exists():
        previous = json.loads(RESULTS_PATH.read_text())
        new = {(x["group"], x["case"]) for x in b.rows}
        results["rows"] = [
            r for r in previous.get("rows", []) if (r["group"], r["case"]) not in new
        ] + b.rows
        results["explain"] = {**previous.get("explain", {}), **b.explained}
        results["verify"] = verify or previous.get("verify", {})
    RESULTS_PATH.write_text(json.dumps(results, indent=1, default=str))
    print_table(results)


def print_table(results) -> None:
    print("\n| group | case | first ms | median ms | queries | slowest query ms | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in results["rows"]:
        note = r.get("error") or r.get("note", "")
        print(
            f"| {r['group']} | {r['case']} | {r['first_ms']:.0f} | {r['median_ms']:.0f} | {r['queries']} | "
            f"{r['slowest_ms'] if r['slowest_ms'] is not None else ''} | {note} |"
        )
    print(f"\nresults: {RESULTS_PATH}")
    print(
        f"drop the database: psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE {DB_NAME} WITH (FORCE)'"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    args = parser.parse_args()
    configure_env()
    if args.fill_child:
        fill(args.executions, args.chunk)
        return
    if not args.skip_fill:
        import shutil

        free = shutil.disk_usage(
            "/var/lib/postgresql" if Path("/var/lib/postgresql").exists() else "/"
        ).free
        # measured: 3.2 GB per million executions (with their audit events), indexes included
        estimate = 3.2e9 * args.executions / 1e6
        print(
            f"free disk: {free / 1e9:.0f} GB; the database will take about {estimate / 1e9:.0f} GB",
            flush=True,
        )
        if estimate > free * 0.8:
            sys.exit("not enough free disk for that many executions: use a smaller --executions")
        create_database()
        t0 = time.time()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--_fill-child",
                "--executions",
                str(args.executions),
                "--chunk",
                str(args.chunk),
            ],
            check=True,
        )
        print(f"fill finished in {time.time() - t0:.0f} s", flush=True)
    elif not database_exists():
        sys.exit(f"{DB_NAME} does not exist: run without --skip-fill first")
    if not args.fill_only:
        bench(args)


if __name__ == "__main__":
    main()
