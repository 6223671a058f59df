"""Rate limits, concurrency limits, result caching and human approval, on the real services."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection

from executions.models import Approval, Execution
from executions.services import shared_state
from executions.services.approvals import approvals_expire
from registry.models import AuditEvent, RateLimitRule, ToolGrant
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services.audit_chain import audit_verify
from tests.conftest import token_client
from tests.factories import make_user
from tests.workers import _database_url, celery_worker, require_broker

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_shared_state():
    client = shared_state.redis_client()
    if client is not None:
        for key in client.scan_iter("toolhub:*"):
            client.delete(key)
    shared_state._local_counters.clear()
    shared_state._local_slots.clear()
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks, owner, approver_user, approvers_role):
    approver = approver_user
    role = role_services.role_create(actor=None, name="callers")
    approvers = approvers_role
    agents = [
        agent_services.agent_create(actor=None, name=f"agent-{i}", owner=owner, role_ids=[role.pk])
        for i in range(2)
    ]
    tool = tool_services.tool_create(
        actor=None,
        name="upstream",
        type="http",
        timeout_seconds=10,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "arg", "type": "string", "default": "x"},
            {"name": "amount", "type": "number", "default": 0},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}/{arg}"},
        ],
    )
    for action in ("execute", "read"):
        grant_services.grant_create(actor=None, role=role, action=action, tool=tool)
    grant_services.grant_create(actor=None, role=approvers, action="approve", tool=tool)
    owner_role = role_services.role_create(actor=None, name="owners")
    owner.groups.add(owner_role)
    grant_services.grant_create(actor=None, role=owner_role, action="approve", tool=tool)
    return {
        "clients": [token_client(a.user) for a in agents],
        "agents": agents,
        "tool": tool,
        "role": role,
        "owner": owner,
        "approver": approver,
        "upstream": upstream,
    }


def call(client, wait=True, **inputs):
    inputs.setdefault("path", "echo")
    return client.post(
        "/api/v1/executions",
        {"tool": "upstream", "input_data": inputs, "wait": wait},
        format="json",
    )


# Rate limits


def test_refused_calls_get_429_headers_and_a_denied_record(world):
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="agent", max_requests=2, time_window_seconds=60
    )
    client = world["clients"][0]
    first = call(client)
    assert first.status_code == 200
    assert first["X-RateLimit-Limit"] == "2" and first["X-RateLimit-Remaining"] == "1"
    assert call(client)["X-RateLimit-Remaining"] == "0"
    refused = call(client)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60 and refused["X-RateLimit-Remaining"] == "0"
    error = refused.json()["error"]
    assert error["code"] == "rate_limited"
    execution = Execution.objects.get(pk=error["execution_id"])
    assert execution.status == "denied" and execution.reason_code == "rate_limited"
    assert AuditEvent.objects.filter(
        action="execution.denied", target_id=str(execution.pk)
    ).exists()
    # Scopes are independent: the other agent has its own counter.
    assert call(world["clients"][1]).status_code == 200


def test_the_window_slides_across_a_boundary(world, monkeypatch):
    """A fixed window let 2x the limit through around its boundary: two calls at
    :59 and two more at :01. The previous window now counts, weighted by how much
    of it still lies within the last minute."""
    import types

    from executions.services import governance

    clock = [1_800_000_000 - 1.0]  # a second before a minute boundary
    monkeypatch.setattr(governance, "time", types.SimpleNamespace(time=lambda: clock[0]))
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="agent", max_requests=2, time_window_seconds=60
    )
    client = world["clients"][0]
    assert [call(client).status_code for _ in range(2)] == [200, 200]
    clock[0] += 2.0  # a second after the boundary
    assert call(client).status_code == 429
    clock[0] += 30.0  # half the previous window still within the last minute: 1 of 2 counts
    assert [call(client).status_code for _ in range(2)] == [200, 429]
    clock[0] += 60.0  # the first window is out of reach
    assert call(client).status_code == 200


def test_all_rules_must_pass_and_global_scope_counts_everyone(world):
    limit_services.rate_limit_create(
        actor=None, scope="agent", max_requests=5, time_window_seconds=60
    )
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="global", max_requests=3, time_window_seconds=60
    )
    a, b = world["clients"]
    statuses = [call(c).status_code for c in (a, b, a, b)]
    assert statuses == [200, 200, 200, 429]


def test_window_resets(world):
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="user", max_requests=1, time_window_seconds=1
    )
    client = world["clients"][0]
    # Start at the beginning of a fresh one-second window.
    time.sleep(1 - (time.time() % 1) + 0.02)
    # Tasks run in-process here: an admitted call answers finished (200).
    assert call(client, wait=False).status_code == 200
    assert call(client, wait=False).status_code == 429
    # Windows slide (the previous one still counts, weighted): a whole window after
    # the first one ended, the call is admitted again.
    time.sleep(2.05)
    assert call(client, wait=False).status_code == 200


def test_role_scope(world):
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="role", max_requests=1, time_window_seconds=60
    )
    a, b = world["clients"]
    assert call(a, wait=False).status_code == 200  # admitted (and run in-process)
    assert call(b, wait=False).status_code == 429  # same role


def test_exactly_n_admitted_across_processes(world):
    require_broker()
    # Windows are fixed (aligned to multiples of their length): a one-hour window makes
    # the run crossing a boundary, which would rightly admit 20 more, a rare event.
    rule = limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="global", max_requests=20, time_window_seconds=3600
    )
    script = f"""
import os, sys, django, threading
sys.path.insert(0, {str(ROOT)!r})
os.environ["DJANGO_SETTINGS_MODULE"] = "toolhub.settings_test"
django.setup()
from concurrent.futures import ThreadPoolExecutor
from django.contrib.auth import get_user_model
from executions.services.governance import rate_limit_admit, RateLimited
from executions.services.pipeline import resolve_caller
from registry.models import Tool
tool = Tool.objects.get(name="upstream")
user = get_user_model().objects.get(username="agent.agent-0")
caller = resolve_caller(user)
barrier = threading.Barrier(10)
def one(_):
    try:
        rate_limit_admit(caller=caller, tool=tool)
        return 1
    except RateLimited:
        return 0
with ThreadPoolExecutor(10) as pool:
    print(sum(pool.map(one, range(100))))
"""
    env = {**os.environ, "DATABASE_URL": _database_url()}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    admitted = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        admitted.append(int(out.strip().splitlines()[-1]))
    assert sum(admitted) == 20, admitted
    assert RateLimitRule.objects.get(pk=rule.pk).max_requests == 20


def test_store_down_fails_closed_for_high_risk_and_open_otherwise(world, monkeypatch):
    import redis

    broken = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr(shared_state, "redis_client", lambda: broken)
    monkeypatch.setattr(shared_state.settings, "REDIS_URL", "redis://127.0.0.1:1/0", raising=False)
    limit_services.rate_limit_create(
        actor=None, tool=world["tool"], scope="agent", max_requests=1, time_window_seconds=60
    )
    client = world["clients"][0]
    assert call(client, wait=False).status_code == 200  # open: admitted uncounted
    tool_services.tool_update(
        actor=None, tool=world["tool"], data={"tool_metadata": {"risk": "high"}}
    )
    refused = call(client, wait=False)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "controls_unavailable"


def test_rate_limit_api_and_audit(world, staff_client):
    tool_id = str(world["tool"].pk)
    created = staff_client.post(
        "/api/v1/rate-limits",
        {"tool_id": tool_id, "scope": "agent", "max_requests": 5, "time_window_seconds": 60},
        format="json",
    )
    assert created.status_code == 201, created.json()
    rule_id = created.json()["id"]
    assert staff_client.get(f"/api/v1/rate-limits?tool_id={tool_id}").json()["count"] == 1
    patched = staff_client.patch(
        f"/api/v1/rate-limits/{rule_id}", {"max_requests": 9}, format="json"
    )
    assert patched.json()["max_requests"] == 9
    bad = staff_client.post(
        "/api/v1/rate-limits",
        {"scope": "planet", "max_requests": 0, "time_window_seconds": 1},
        format="json",
    )
    assert bad.status_code == 400
    assert {d["field"] for d in bad.json()["error"]["details"]} == {"scope", "max_requests"}
    # An agent that may only execute cannot change limits.
    assert (
        world["clients"][0]
        .patch(f"/api/v1/rate-limits/{rule_id}", {"max_requests": 99}, format="json")
        .status_code
        == 403
    )
    assert staff_client.delete(f"/api/v1/rate-limits/{rule_id}").status_code == 204
    actions = set(
        AuditEvent.objects.filter(action__startswith="rate_limit.").values_list("action", flat=True)
    )
    assert actions == {"rate_limit.created", "rate_limit.updated", "rate_limit.deleted"}


# Concurrency limits


def test_semaphore_leases_free_a_dead_holders_slot():
    key = "toolhub:slots:test"
    assert shared_state.slot_acquire(key, "a", 1, lease_seconds=0.3)
    assert not shared_state.slot_acquire(key, "b", 1, lease_seconds=5)
    time.sleep(0.35)  # "a" died without releasing; its lease ran out
    assert shared_state.slot_acquire(key, "b", 1, lease_seconds=5)


@pytest.mark.slow
def test_max_concurrency_holds_across_worker_processes(world, eager_tasks):
    eager_tasks.conf.task_always_eager = False  # the real worker runs them
    tool_services.tool_update(actor=None, tool=world["tool"], data={"max_concurrency": 2})
    client = world["clients"][0]
    with celery_worker(concurrency=4):
        ids = [call(client, wait=False, path="slow", arg="0.4").json()["id"] for _ in range(8)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            statuses = set(Execution.objects.filter(pk__in=ids).values_list("status", flat=True))
            if statuses <= {"succeeded", "failed"}:
                break
            time.sleep(0.1)
    assert statuses == {"succeeded"}
    # Four worker processes were free, the tool allows two at once: never more than two.
    assert world["upstream"].max_in_flight == 2


# Result cache


def test_cache_hit_miss_and_version_bump(world):
    tool = world["tool"]
    tool_services.tool_update(actor=None, tool=tool, data={"cache_ttl_seconds": 60})
    client = world["clients"][0]
    first = call(client).json()
    second = call(client).json()
    other = call(client, arg="y").json()
    assert first["status"] == second["status"] == other["status"] == "succeeded"
    assert second["output_data"] == first["output_data"]
    assert Execution.objects.get(pk=second["id"]).cached_from_id is not None
    assert str(Execution.objects.get(pk=second["id"]).cached_from_id) == first["id"]
    assert second["cached_from"] == first["id"] and first["cached_from"] is None
    assert len(world["upstream"].requests) == 2  # first and "y"; the second call was cached
    tool_services.tool_update(actor=None, tool=tool, data={"version": "2.0.0"})
    third = call(client).json()
    assert Execution.objects.get(pk=third["id"]).cached_from_id is None
    assert len(world["upstream"].requests) == 3
    # Failures are never cached.
    call(client, path="status", arg="500")
    call(client, path="status", arg="500")
    assert len(world["upstream"].requests) == 5
    # A config change (another upstream, a header) is a new definition: no stale answer.
    assert Execution.objects.get(pk=call(client).json()["id"]).cached_from_id is not None
    tool_services.config_set(
        actor=None, tool=tool, config_key="headers", config_value={"X-Env": "staging"}
    )
    fourth = call(client).json()
    assert Execution.objects.get(pk=fourth["id"]).cached_from_id is None
    assert len(world["upstream"].requests) == 6
    # A cached answer called nothing: it costs nothing (stats add costs up).
    tool_services.tool_update(
        actor=None, tool=tool, data={"tool_metadata": {"cost_per_call": "0.5"}}
    )
    paid, free = call(client, arg="z").json(), call(client, arg="z").json()
    assert free["cached_from"] == paid["id"]
    assert Execution.objects.get(pk=paid["id"]).cost == Decimal("0.5")
    assert Execution.objects.get(pk=free["id"]).cost == 0


def test_uncacheable_settings_are_refused(world, staff_client):
    tool = world["tool"]
    tool_services.config_set(actor=None, tool=tool, config_key="method", config_value="POST")
    response = staff_client.patch(
        f"/api/v1/tools/{tool.pk}", {"cache_ttl_seconds": 30}, format="json"
    )
    assert response.status_code == 400
    assert "not idempotent" in response.json()["error"]["message"]
    tool_services.config_set(actor=None, tool=tool, config_key="method", config_value="GET")
    tool_services.tool_update(actor=None, tool=tool, data={"cache_ttl_seconds": 30})
    refused = staff_client.post(
        f"/api/v1/tools/{tool.pk}/configs",
        {"config_key": "headers_input_map", "config_value": {"arg": "X-Secret"}},
        format="json",
    )
    assert refused.status_code == 400 and "per-call secrets" in refused.json()["error"]["message"]


# Approval


def approval_client(user):
    return token_client(user)


@pytest.fixture
def gated(world):
    tool_services.tool_update(
        actor=None,
        tool=world["tool"],
        data={
            "requires_approval": True,
            "approval_condition": {
                "properties": {"amount": {"minimum": 1000}},
                "required": ["amount"],
            },
            "tool_metadata": {"risk": "high", "safety": "destructive"},
        },
    )
    return world


def test_approval_happy_path_and_condition(gated):
    client = gated["clients"][0]
    small = call(client, amount=10)
    assert small.status_code == 200 and small.json()["status"] == "succeeded"  # below the threshold
    started = time.monotonic()
    big = call(client, amount=5000, wait=30)
    assert time.monotonic() - started < 5
    assert big.status_code == 202 and big.json()["status"] == "pending_approval"
    pending_approval = Approval.objects.get(execution_id=big.json()["id"])
    assert big.json()["links"]["approval"].endswith(f"/api/v1/approvals/{pending_approval.pk}")
    approvals = approval_client(gated["approver"])
    queue = approvals.get("/api/v1/approvals?status=pending").json()
    assert queue["count"] == 1
    approval_id = queue["results"][0]["id"]
    assert queue["results"][0]["execution"]["input_data"]["amount"] == 5000
    assert queue["results"][0]["agent_owner"] == "owner-olga"
    decided = approvals.post(f"/api/v1/approvals/{approval_id}/approve", {}, format="json")
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    execution = client.get(f"/api/v1/executions/{big.json()['id']}").json()
    assert execution["status"] == "succeeded"
    actions = list(
        AuditEvent.objects.filter(target_id__in=[big.json()["id"], approval_id])
        .order_by("id")
        .values_list("action", "actor_name")
    )
    assert actions == [
        ("execution.pending_approval", "agent.agent-0"),
        ("approval.requested", "agent.agent-0"),
        ("approval.approved", "ann-approver"),
        ("execution.queued", "ann-approver"),
        ("execution.succeeded", "agent.agent-0"),
    ]


def test_reject_needs_a_reason(gated):
    client = gated["clients"][0]
    pending = call(client, amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    approvals = approval_client(gated["approver"])
    no_reason = approvals.post(f"/api/v1/approvals/{approval.pk}/reject", {}, format="json")
    assert (
        no_reason.status_code == 400
        and no_reason.json()["error"]["details"][0]["field"] == "reason"
    )
    rejected = approvals.post(
        f"/api/v1/approvals/{approval.pk}/reject", {"reason": "Amount too large"}, format="json"
    )
    assert (
        rejected.json()["status"] == "rejected" and rejected.json()["reason"] == "Amount too large"
    )
    execution = Execution.objects.get(pk=pending["id"])
    assert execution.status == "rejected" and "Amount too large" in execution.error_message
    assert gated["upstream"].requests == []


def test_the_owner_at_the_time_of_the_request_may_not_approve_after_the_agent_is_reassigned(
    gated,
):
    """Four eyes binds the requester, the agent's owner then and its owner now."""
    agent = gated["agents"][0]
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    assert Execution.objects.get(pk=pending["id"]).agent_owner_id == gated["owner"].pk
    heir = make_user("heir-hana")
    heir.groups.add(*gated["owner"].groups.all())  # the same approve right on the tool
    agent_services.agent_update(actor=None, agent=agent, data={"owner": heir})

    for person, why in ((gated["owner"], "owned the agent"), (heir, "own the agent")):
        refused = approval_client(person).post(
            f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
        )
        assert refused.status_code == 403, refused.content
        assert refused.json()["error"]["code"] == "four_eyes"
        assert why in refused.json()["error"]["message"]
    assert Approval.objects.get(pk=approval.pk).status == "pending"

    decided = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    finished = Execution.objects.get(pk=pending["id"])
    assert finished.status == "succeeded" and finished.agent_owner_id == gated["owner"].pk
    assert audit_verify().ok


def test_deleting_a_former_owner_of_an_agent_keeps_its_finished_calls(world):
    done = call(world["clients"][0])
    assert done.status_code == 200 and done.json()["status"] == "succeeded"
    heir = make_user("heir-hugo")
    agent_services.agent_update(actor=None, agent=world["agents"][0], data={"owner": heir})
    agent_services.agent_update(actor=None, agent=world["agents"][1], data={"owner": heir})

    world["owner"].delete()  # the finished row lets go of it, as of a deleted principal

    row = Execution.objects.get(pk=done.json()["id"])
    assert row.status == "succeeded" and row.agent_owner_id is None
    assert audit_verify().ok


def test_agents_in_approver_roles_see_only_their_own_calls(gated):
    """An agent never decides, so other callers' pending arguments are not shown to it."""
    approvers = role_services.role_create(actor=None, name="bot-approvers")
    grant_services.grant_create(actor=None, role=approvers, action="approve", tool=gated["tool"])
    other, bot = gated["agents"][0], gated["agents"][1]
    agent_services.agent_update(
        actor=None,
        agent=bot,
        data={"role_ids": [g.pk for g in bot.user.groups.all()] + [approvers.pk]},
    )
    secret_call = call(gated["clients"][0], amount=7777).json()
    own_call = call(gated["clients"][1], amount=8888).json()
    listed = gated["clients"][1].get("/api/v1/approvals?status=pending").json()
    assert [a["execution"]["id"] for a in listed["results"]] == [own_call["id"]]
    assert "7777" not in json.dumps(listed)
    theirs = Approval.objects.get(execution_id=secret_call["id"])
    assert gated["clients"][1].get(f"/api/v1/approvals/{theirs.pk}").status_code == 404
    assert other.pk != bot.pk
    # The person approver still sees both, and so does the agents' owner (who cannot decide).
    both = approval_client(gated["approver"]).get("/api/v1/approvals?status=pending").json()
    assert both["count"] == 2
    owner = approval_client(gated["owner"])
    assert owner.get("/api/v1/approvals?status=pending").json()["count"] == 2
    decided = owner.post(f"/api/v1/approvals/{theirs.pk}/approve", {}, format="json")
    assert decided.status_code == 403 and decided.json()["error"]["code"] == "four_eyes"


def test_four_eyes(gated):
    client = gated["clients"][0]
    pending = call(client, amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    owner = approval_client(gated["owner"])
    refused = owner.post(f"/api/v1/approvals/{approval.pk}/approve", {}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "four_eyes"
    # The requesting agent sees its own call's entry, and cannot decide it.
    own = client.post(f"/api/v1/approvals/{approval.pk}/approve", {}, format="json")
    assert own.status_code == 403 and "Agents cannot approve" in own.json()["error"]["message"]
    # Someone without the approve right cannot either.
    stranger = token_client(make_user("stranger"))
    assert (
        stranger.post(f"/api/v1/approvals/{approval.pk}/approve", {}, format="json").status_code
        == 404
    )
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_two_approvers_at_once_exactly_one_wins(gated):
    if connection.vendor == "sqlite":
        pytest.skip(
            "concurrent writers need PostgreSQL (SQLite's in-memory test database locks tables)"
        )
    second = make_user("bea-approver")
    second.groups.add(gated["approver"].groups.get(name="approvers"))
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    results = []
    barrier = threading.Barrier(2)

    def decide(user, approve):
        client = approval_client(user)
        barrier.wait()
        path = "approve" if approve else "reject"
        results.append(
            client.post(
                f"/api/v1/approvals/{approval.pk}/{path}", {"reason": "race"}, format="json"
            ).status_code
        )
        connection.close()

    threads = [
        threading.Thread(target=decide, args=(gated["approver"], True)),
        threading.Thread(target=decide, args=(second, False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 409], results
    decided = Approval.objects.get(pk=approval.pk)
    assert decided.status in ("approved", "rejected")
    assert (
        AuditEvent.objects.filter(action__in=["approval.approved", "approval.rejected"]).count()
        == 1
    )


def test_expiry(gated):
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    assert approvals_expire() == 0
    assert approvals_expire(now=approval.expires_at + timedelta(seconds=1)) == 1
    assert Execution.objects.get(pk=pending["id"]).status == "expired"
    late = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert late.status_code == 409
    # The same answer as when the request itself notices the deadline.
    assert late.json()["error"]["code"] == "approval_expired"
    assert AuditEvent.objects.filter(action="approval.expired").count() == 1


def test_an_expired_approval_says_so_without_the_periodic_task(gated):
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    Approval.objects.filter(pk=approval.pk).update(expires_at=approval.requested_at)
    late = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert late.status_code == 409, late.content
    error = late.json()["error"]
    assert error["code"] == "approval_expired" and "expired at" in error["message"]
    assert Approval.objects.get(pk=approval.pk).status == "expired"
    assert Execution.objects.get(pk=pending["id"]).status == "expired"
    assert gated["upstream"].requests == []


def test_a_cancelled_call_cannot_be_approved(gated):
    client = gated["clients"][0]
    pending = call(client, amount=5000).json()
    assert client.post(f"/api/v1/executions/{pending['id']}/cancel").status_code == 200
    approval = Approval.objects.get(execution_id=pending["id"])
    assert approval.status == "cancelled" and "cancelled by agent.agent-0" in approval.reason
    approvals = approval_client(gated["approver"])
    assert approvals.get("/api/v1/approvals?status=pending").json()["count"] == 0
    late = approvals.post(f"/api/v1/approvals/{approval.pk}/approve", {}, format="json")
    assert late.status_code == 409 and late.json()["error"]["code"] == "already_decided"
    assert Execution.objects.get(pk=pending["id"]).status == "cancelled"
    assert AuditEvent.objects.filter(action="approval.cancelled").count() == 1
    assert gated["upstream"].requests == []


@pytest.mark.parametrize(
    "change",
    [
        "deactivated",
        "revoked",
        "new_version",
        "agent_off",
        "config",
        "parameter",
        "config_deleted",
        "parameter_deleted",
        "timeout",
        "owner_off",
        "renamed",
    ],
)
def test_an_approved_call_does_not_run_what_nobody_decided_on(gated, change):
    metadata = {**gated["tool"].tool_metadata, "cost_per_call": "0.25"}
    tool_services.tool_update(actor=None, tool=gated["tool"], data={"tool_metadata": metadata})
    pending = call(gated["clients"][0], amount=5000).json()
    assert Execution.objects.get(pk=pending["id"]).cost == Decimal("0.25")
    approval = Approval.objects.get(execution_id=pending["id"])
    tool = gated["tool"]
    if change == "deactivated":
        tool_services.tool_deactivate(actor=None, tool=tool)
        code = "tool_inactive"
    elif change == "revoked":
        for grant in ToolGrant.objects.filter(role=gated["role"], tool=tool):
            grant_services.grant_revoke(actor=None, grant=grant)
        code = "permission_denied"
    elif change == "new_version":
        tool_services.tool_update(actor=None, tool=tool, data={"version": "2.0.0"})
        code = "tool_changed"
    elif change == "config":  # the endpoint moves, the version stays
        tool_services.config_set(
            actor=None, tool=tool, config_key="endpoint", config_value="/elsewhere/{path}"
        )
        code = "tool_changed"
    elif change == "parameter":
        parameter = tool.parameters.get(name="arg")
        tool_services.parameter_update(actor=None, parameter=parameter, data={"default": "y"})
        code = "tool_changed"
    elif change == "config_deleted":  # the endpoint goes: the call would hit base_url itself
        config = tool.configs.get(config_key="endpoint")
        tool_services.config_delete(actor=None, config=config)
        code = "tool_changed"
    elif change == "parameter_deleted":
        parameter = tool.parameters.get(name="amount")
        tool_services.parameter_delete(actor=None, parameter=parameter)
        code = "tool_changed"
    elif change == "timeout":
        tool_services.tool_update(actor=None, tool=tool, data={"timeout_seconds": 3})
        code = "tool_changed"
    elif change == "renamed":
        tool_services.tool_update(actor=None, tool=tool, data={"name": "pay_other"})
        code = "tool_changed"
    elif change == "owner_off":
        owner = gated["agents"][0].owner
        owner.is_active = False
        owner.save(update_fields=["is_active"])
        code = "permission_denied"
    else:
        agent_services.agent_update(actor=None, agent=gated["agents"][0], data={"is_active": False})
        code = "permission_denied"
    refused = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == code
    execution = Execution.objects.get(pk=pending["id"])
    assert execution.status == "denied" and execution.reason_code == code
    assert Approval.objects.get(pk=approval.pk).status == "cancelled"
    assert gated["upstream"].requests == []


def test_editing_the_description_or_metadata_keeps_pending_approvals(gated):
    """Only what a call does counts: rewording the tool's page must not close every
    pending approval (it did: any edit moved the timestamp the check compared)."""
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    tool = gated["tool"]
    tool_services.tool_update(
        actor=None,
        tool=tool,
        data={"description": "Pays a supplier.", "tool_metadata": {"category": "payments"}},
    )
    parameter = tool.parameters.get(name="amount")
    tool_services.parameter_update(
        actor=None, parameter=parameter, data={"description": "In cents."}
    )
    approved = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert approved.status_code == 200, approved.content
    assert Execution.objects.get(pk=pending["id"]).status == "succeeded"


def test_changed_arguments_cannot_be_approved(gated):
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    # Someone edits the stored arguments behind the API's back.
    Execution.objects.filter(pk=pending["id"]).update(
        input_data={"path": "echo", "arg": "x", "amount": 999999}
    )
    refused = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "arguments_changed"
    assert gated["upstream"].requests == []


def test_webhook_is_signed_and_sent_on_the_outcome(gated, upstream2):
    import hashlib
    import hmac

    from registry import crypto

    agent = gated["agents"][0]
    agent.webhook_url = f"{upstream2.url}/echo/hook"
    agent.webhook_secret = crypto.encrypt_json("whsec-test")
    agent.save()
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/reject", {"reason": "no"}, format="json"
    )
    hook = upstream2.last
    body = hook.body
    timestamp, signature = (
        part.split("=", 1)[1] for part in hook.headers["x-toolhub-signature"].split(",")
    )
    expected = hmac.new(b"whsec-test", f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert signature == expected
    assert json.loads(body)["execution"]["status"] == "rejected"


def test_a_rejection_is_answered_when_its_webhook_cannot_be_queued(gated, eager_tasks, monkeypatch):
    from kombu.exceptions import OperationalError

    from executions.tasks import deliver_webhook

    def broker_down(*args, **kwargs):
        raise OperationalError("Timeout reading from socket")

    agent = gated["agents"][0]
    agent.webhook_url = "http://127.0.0.1:9/hook"
    agent.save()
    pending = call(gated["clients"][0], amount=5000).json()
    approval = Approval.objects.get(execution_id=pending["id"])
    eager_tasks.conf.task_always_eager = False  # restored by the fixture
    monkeypatch.setattr(deliver_webhook, "delay", broker_down)
    rejected = approval_client(gated["approver"]).post(
        f"/api/v1/approvals/{approval.pk}/reject", {"reason": "no"}, format="json"
    )
    assert rejected.status_code == 200, rejected.content
    assert Execution.objects.get(pk=pending["id"]).status == "rejected"
    failed = AuditEvent.objects.get(action="webhook.failed")
    assert failed.after["problem"] == "not queued: OperationalError"


def test_webhook_failures_are_retried_and_the_outcome_audited(gated, upstream2):
    from executions.services import webhooks
    from executions.tasks import deliver_webhook
    from registry import crypto

    agent = gated["agents"][0]
    agent.webhook_secret = crypto.encrypt_json("whsec-retries-0123")
    agent.webhook_url = f"{upstream2.url}/attempts/hook?fail=2&status=503"
    agent.save()
    pending = call(gated["clients"][0], amount=5000).json()
    execution_id = pending["id"]
    # 503 twice: worth another try each time, then delivered on the third attempt.
    assert webhooks.deliver(execution_id, attempt=1, last_attempt=False) == webhooks.RETRY
    assert webhooks.deliver(execution_id, attempt=2, last_attempt=False) == webhooks.RETRY
    assert webhooks.deliver(execution_id, attempt=3, last_attempt=True) == webhooks.DELIVERED
    delivered = AuditEvent.objects.get(action="webhook.delivered")
    assert delivered.target_id == str(agent.pk) and delivered.after["attempts"] == 3
    assert "whsec-retries-0123" not in json.dumps(delivered.after)

    # A 4xx answer is not tried again; the failure is in the audit log.
    agent.webhook_url = f"{upstream2.url}/status/404"
    agent.save()
    assert webhooks.deliver(execution_id, attempt=1, last_attempt=False) == webhooks.GAVE_UP
    failed = AuditEvent.objects.get(action="webhook.failed")
    assert failed.after["problem"] == "answered 404"
    # Nobody listening: retried by the worker; in-process (eager) there is one attempt.
    agent.webhook_url = "http://127.0.0.1:9/hook"
    agent.save()
    assert webhooks.deliver(execution_id, attempt=1, last_attempt=False) == webhooks.RETRY
    assert deliver_webhook.apply(args=[execution_id]).get() == webhooks.GAVE_UP
    assert AuditEvent.objects.filter(action="webhook.failed").count() == 2


@pytest.mark.parametrize("who", ["agent", "owner"])
def test_a_queued_call_of_an_agent_deactivated_before_it_ran_is_denied(world, monkeypatch, who):
    from executions.services import pipeline, runner

    monkeypatch.setattr(pipeline, "enqueue", lambda execution, tool: True)  # no worker yet
    queued = call(world["clients"][0], wait=False)
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    agent = world["agents"][0]
    if who == "agent":
        agent_services.agent_update(actor=None, agent=agent, data={"is_active": False})
    else:  # the person it answers to left
        agent.owner.is_active = False
        agent.owner.save(update_fields=["is_active"])
    assert runner.execution_run(execution_id=queued.json()["id"]) is None
    execution = Execution.objects.get(pk=queued.json()["id"])
    assert execution.status == "denied" and execution.reason_code == "agent_inactive"
    assert world["upstream"].requests == []


def test_a_queued_call_of_a_tool_deactivated_before_it_ran_is_denied(world, monkeypatch):
    from executions.services import pipeline, runner

    monkeypatch.setattr(pipeline, "enqueue", lambda execution, tool: True)  # no worker yet
    queued = call(world["clients"][0], wait=False)
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    tool_services.tool_deactivate(actor=None, tool=world["tool"])
    assert runner.execution_run(execution_id=queued.json()["id"]) is None
    execution = Execution.objects.get(pk=queued.json()["id"])
    assert execution.status == "denied" and execution.reason_code == "tool_inactive"
    assert AuditEvent.objects.filter(
        action="execution.denied", target_id=str(execution.pk)
    ).exists()
    assert world["upstream"].requests == []


def test_a_call_waiting_for_a_slot_polls_less_as_it_waits(world, eager_tasks, monkeypatch):
    """A beat every few seconds, not a row update and a broker task every 0.2 s."""
    from datetime import timedelta

    from django.utils import timezone

    from executions.services.runner import claim
    from executions.tasks import run_execution

    sent = []
    eager_tasks.conf.task_always_eager = False  # a worker's path; the fixture restores it
    monkeypatch.setattr(run_execution, "apply_async", lambda **kw: sent.append(kw["countdown"]))
    now = timezone.now()
    execution = Execution.objects.create(
        tool=world["tool"],
        tool_name=world["tool"].name,
        tool_type="http",
        status="queued",
        queued_at=now - timedelta(seconds=1),
        heartbeat_at=now - timedelta(seconds=1),
    )
    claim._wait_for_slot(execution, world["tool"])
    assert Execution.objects.get(pk=execution.pk).heartbeat_at == execution.heartbeat_at
    assert sent[-1] == claim.SLOT_RETRY_SECONDS  # soon, at first
    execution.queued_at = now - timedelta(seconds=60)
    execution.heartbeat_at = now - timedelta(seconds=30)
    claim._wait_for_slot(execution, world["tool"])
    assert Execution.objects.get(pk=execution.pk).heartbeat_at > execution.heartbeat_at
    assert sent[-1] == claim.SLOT_RETRY_MAX_SECONDS  # long waits poll every 2 s


@pytest.fixture
def decided(gated):
    """One approved, one rejected and one pending approval, all verified intact."""
    from executions.services.approvals import approval_decide

    client = gated["clients"][0]
    ids = [call(client, amount=5000 + i).json()["id"] for i in range(3)]
    approved, rejected, pending = (Approval.objects.get(execution_id=i) for i in ids)
    approval_decide(actor=gated["approver"], approval=approved, approve=True)
    approval_decide(actor=gated["approver"], approval=rejected, approve=False, reason="Too much")
    report = audit_verify()
    assert report.ok, report.problem
    return {"approved": approved, "rejected": rejected, "pending": pending}


@pytest.mark.parametrize(
    ("which", "column", "value"),
    [
        ("approved", "decided_by_name", "someone-else"),
        ("rejected", "reason", "Looked fine"),
        ("rejected", "status", "approved"),
        ("approved", "status", "pending"),  # set back, to be decided again
        ("pending", "input_hash", "0" * 64),  # would bind other arguments
        ("pending", "status", "approved"),  # decided without any event
        ("rejected", "decided_at", "2020-01-01T00:00:00Z"),  # when it was decided
    ],
)
def test_an_approval_edited_behind_toolhubs_back_fails_verification(decided, which, column, value):
    from tests.registry.test_audit_chain import tamper

    approval = decided[which]
    tamper(f"UPDATE executions_approval SET {column} = %s WHERE id = %s", [value, approval.pk])  # noqa: S608
    report = audit_verify()
    assert not report.ok
    assert report.problem.kind in ("record_altered", "record_unaudited")
    assert str(approval.pk) in report.problem.message
