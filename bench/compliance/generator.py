# ruff: noqa: UP031  (percent formatting of row templates: fast and readable)
"""Executions, their audit events (sealed as the sealer would) and approvals, in time order."""

from __future__ import annotations

import hashlib
import heapq
import json
import random
import time

from compliance.calls import Call
from compliance.rows import DENIALS, ERRORS, INPUT_TEMPLATES, N, iso, rand_uuid, weighted

HOUR_US = 3_600_000_000


class Generator:
    """Produces executions, their audit events (sealed) and approvals, in time order.

    Every draw comes from ``rng`` (the audit events' content hashes from ``random``),
    in a fixed order: the same seeds give the same rows.
    """

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

    def _later(self, call, occ_us, actor_id, actor_name, status, error_type, attempts, rid, client):
        """An event of ``call`` at a later time (``execution.<status>``), emitted in time order."""
        after = call.summary(status, "", error_type, attempts, _content_hash())
        args = (actor_id, actor_name, f"execution.{status}", call.eid, call.target_repr, after)
        self.tiebreak += 1
        heapq.heappush(self.pending, (occ_us, self.tiebreak, (*args, rid, client)))

    def _flush_until(self, out, until_us):
        pending = self.pending
        while pending and pending[0][0] <= until_us:
            occ_us, _, args = heapq.heappop(pending)
            self._emit(out, occ_us, *args)

    # executions -------------------------------------------------------------
    def chunk(self, count):
        """Generate ``count`` executions; returns (execution lines, audit lines)."""
        rand = self.rng.random
        ex_out: list[str] = []
        au_out: list[str] = []
        for _ in range(count):
            t = self.start_us + int((self.index + rand()) * self.avg_gap)
            self.index += 1
            self._flush_until(au_out, t)
            call = self._call(t)
            tool = call.tool
            r = rand()
            if r < 0.065:
                self._refused(call)
            elif r < 0.105:
                self._invalid(call)
            elif tool["cached"] and rand() < 0.3 and tool["id"] in self.last_success_by_tool:
                self._cached(call)
            else:
                self._admitted(call)
            for action, status, attempts, error_type, reason in call.events_now:
                after = call.summary(status, reason, error_type, attempts, _content_hash())
                self._emit(
                    au_out,
                    t,
                    call.principal_id,
                    call.principal_name,
                    action,
                    call.eid,
                    call.target_repr,
                    after,
                    call.request_id,
                    call.client,
                )
            ex_out.append(call.execution_row(iso(t)))
        return ex_out, au_out

    def _call(self, t) -> Call:
        """Who calls (96 % agents, skewed; 4 % people through the admin's test run), which tool
        of theirs (Zipf-like), with which arguments."""
        rng, rand, bits, cat = self.rng, self.rng.random, self.rng.getrandbits, self.catalog
        eid = rand_uuid(bits)
        request_id = "%032x" % bits(128)
        if rand() < 0.96:
            agents = cat["agents"]
            caller = (
                agents[min(int(rng.paretovariate(1.2)) - 1, len(agents) - 1)]
                if rand() < 0.5
                else agents[int(rand() * len(agents))]
            )
            agent_id, tool_pool, client = caller["id"], caller["tools"], caller["ip"]
        else:
            caller = cat["humans"][int(rand() * len(cat["humans"]))]
            agent_id, tool_pool = None, caller["tools"] or cat["tools"]
            client = "192.168.10.%d" % (1 + int(rand() * 200))
        idx = (
            min(int(rng.paretovariate(1.1)) - 1, len(tool_pool) - 1)
            if rand() < 0.7
            else int(rand() * len(tool_pool))
        )
        tool = tool_pool[idx]
        roles = caller["roles"]
        role_id = cat["role_ids"][roles[0]] if rand() < 0.1 and roles else N
        a = 1 + int(rand() * 99999)
        b = 1 + int(rand() * 50)
        input_json = INPUT_TEMPLATES[tool["type"]] % (a, b)
        return Call(
            t=t,
            eid=eid,
            request_id=request_id,
            principal_id=caller["user_id"],
            principal_name=caller["username"],
            roles_json=caller["roles_json"],
            roles=roles,
            agent_id=agent_id,
            client=client,
            tool=tool,
            role_id=role_id,
            a=a,
            b=b,
            input_json=input_json,
            ih=hashlib.sha256(input_json.encode()).hexdigest(),
            tool_id=tool["id"],
            tool_name=tool["name"],
            tool_version=tool["version"],
            tool_type=tool["type"],
            requested=tool["name"],
            target_repr=f"{tool['name']} by {caller['username']}",
            cost=tool["cost"],
        )

    def _refused(self, call: Call) -> None:
        """Refused at admission: no permission, rate limited, unknown or inactive tool."""
        call.reason, _, call.error_message = self.pick_denial()
        call.status = "denied"
        if call.reason == "tool_not_found":
            call.tool_id = N
            call.tool_name = call.tool_version = call.tool_type = ""
            call.requested = f"{call.tool['name'][:-4]}_{int(self.rng.random() * 900) + 100}x"
            call.target_repr = f"{call.requested} by {call.principal_name}"
            call.input_json = N
            call.ih = ""
        elif call.reason == "tool_inactive":
            inactive = self.catalog["inactive"]
            call.tool_id, call.tool_name = inactive["id"], inactive["name"]
            call.tool_version, call.tool_type = inactive["version"], inactive["type"]
            call.requested = call.tool_name
            call.target_repr = f"{call.tool_name} by {call.principal_name}"
        call.cost = N
        call.finished_at = iso(call.t)
        call.events_now.append(("execution.denied", call.status, 0, "", call.reason))

    def _invalid(self, call: Call) -> None:
        """Arguments that are not JSON (15 %) or do not match the schema."""
        call.status, call.reason = "invalid", "invalid_arguments"
        if self.rng.random() < 0.15:
            call.raw_input = '{"account_id": ACC-%d' % call.a
            call.input_json = N
            call.ih = ""
            call.error_message = "$: the arguments are not valid JSON (Expecting value at line 1)"
        else:
            call.error_message = "$.limit: 'many' is not of type 'integer'"
        call.cost = N
        call.finished_at = iso(call.t)
        call.events_now.append(("execution.invalid", call.status, 0, "", call.reason))

    def _cached(self, call: Call) -> None:
        call.status = "succeeded"
        call.cached_from = self.last_success_by_tool[call.tool["id"]]
        call.succeeded_output()
        call.started_at = call.finished_at = iso(call.t)
        call.exec_ms = "0"
        call.events_now.append(("execution.succeeded", call.status, 0, "", ""))

    def _admitted(self, call: Call) -> None:
        latency_ms = self.rng.lognormvariate(5.0, 0.9)
        if call.tool["approval"]:
            self._approval_gated(call, latency_ms)
        else:
            self._queued(call, latency_ms)
        if call.status == "succeeded":
            call.succeeded_output()
            self.last_success_by_tool[call.tool["id"]] = call.eid

    def _approval_gated(self, call: Call, latency_ms: float) -> None:
        """Waits for a person: approved (85 %), rejected (10 %), or nobody decides in time."""
        rand, t = self.rng.random, call.t
        decide = t + int((30 + rand() * 1800) * 1_000_000)
        appr = self.catalog["approvers"][int(rand() * len(self.catalog["approvers"]))]
        d = rand()
        if decide > self.end_us:
            call.status = "pending_approval"
            self.approvals.append(self._approval(call, "pending", None, None))
        elif d < 0.85:
            approve_rid = "%032x" % self.rng.getrandbits(128)
            self.approvals.append(self._approval(call, "approved", appr, decide))
            approver = (appr["user_id"], appr["username"])
            ip = "192.168.1.%d" % (10 + int(rand() * 3))
            self._later(call, decide, *approver, "queued", "", 0, approve_rid, ip)
            call.queued_at = iso(decide)
            call.deadline_at = iso(decide + 300_000_000)
            done = decide + int(latency_ms * 1000) + 50_000
            if done > self.end_us:
                call.status = "queued"
            else:
                self._ran(call, decide, done, latency_ms)
        elif d < 0.95:
            call.status, call.error_type = "rejected", "rejected"
            call.error_message = "Rejected: not during a change freeze"
            call.finished_at = iso(decide)
            self.approvals.append(self._approval(call, "rejected", appr, decide))
            after = (appr["user_id"], appr["username"], "rejected", "rejected", 0)
            self._later(call, decide, *after, "%032x" % self.rng.getrandbits(128), "192.168.1.11")
        elif t + HOUR_US > self.end_us:
            call.status = "pending_approval"
            self.approvals.append(self._approval(call, "pending", None, None))
        else:
            expire = t + HOUR_US
            call.status, call.error_type = "expired", "approval_expired"
            call.error_message = "Nobody decided in time"
            call.finished_at = iso(expire)
            self.approvals.append(self._approval(call, "expired", None, expire))
            rid = f"task-{call.eid}"
            self._later(call, expire, None, "system", "expired", "approval_expired", 0, rid, None)
        call.events_now.append(("execution.pending_approval", "pending_approval", 0, "", ""))

    def _queued(self, call: Call, latency_ms: float) -> None:
        """Queued at once: still running or queued at the window's end, cancelled, or done."""
        rand, t = self.rng.random, call.t
        call.queued_at = iso(t)
        call.deadline_at = iso(t + 300_000_000)
        done = t + int(latency_ms * 1000) + 30_000
        call.events_now.append(("execution.queued", "queued", 0, "", ""))
        if done > self.end_us:
            call.status = "running" if rand() < 0.5 else "queued"
            if call.status == "running":
                call.started_at = iso(t + 20_000)
                call.attempts = 1
        elif rand() < 0.003:
            call.status, call.error_type = "cancelled", ""
            call.finished_at = iso(t + 5_000)
            rid = "%032x" % self.rng.getrandbits(128)
            caller = (call.principal_id, call.principal_name)
            self._later(call, t + 5_000, *caller, "cancelled", "", 0, rid, call.client)
        else:
            self._ran(call, t, done, latency_ms)

    def _ran(self, call: Call, queued_us: int, done: int, latency_ms: float) -> None:
        """A worker ran it (started 20 ms after it was queued) and it finished at ``done``."""
        status, call.error_type, call.error_message, call.upstream, call.attempts = self._outcome()
        call.status = status
        call.started_at = iso(queued_us + 20_000)
        call.finished_at = iso(done)
        call.exec_ms = "%.3f" % latency_ms
        call.worker = "celery@worker-%d" % (1 + int(self.rng.random() * 4))
        caller = (call.principal_id, call.principal_name)
        outcome = (status, call.error_type, call.attempts)
        self._later(call, done, *caller, *outcome, call.request_id, None)

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

    def _approval(self, call: Call, status, approver, decided_us):
        aid = rand_uuid(self.rng.getrandbits)
        decided = approver and status in ("approved", "rejected")
        decided_by = approver["user_id"] if decided else N
        decided_name = approver["username"] if decided else ""
        decided_at = iso(decided_us) if decided_us and status != "pending" else N
        reason = "Change freeze" if status == "rejected" else ("ok" if status == "approved" else "")
        requested = call.t
        return (
            f"{aid}\t{call.eid}\t{call.ih}\t{status}\t{iso(requested)}\t"
            f"{iso(requested + HOUR_US)}\t{decided_by}\t{decided_name}\t{decided_at}\t{reason}\n"
        )


def _content_hash() -> str:
    return "%064x" % random.getrandbits(256)
