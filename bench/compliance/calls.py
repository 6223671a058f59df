# ruff: noqa: UP031  (percent formatting of row templates: fast and readable)
"""One generated call: who made it, to which tool, what became of it, and its execution row."""

from __future__ import annotations

from dataclasses import dataclass, field

from compliance.rows import N


@dataclass(slots=True)
class Call:
    t: int  # when it was made (µs since the epoch)
    eid: str
    request_id: str
    principal_id: int
    principal_name: str
    roles_json: str
    roles: list
    agent_id: str | None
    client: str
    tool: dict
    role_id: object
    a: int  # the numbers in its arguments (and in its output)
    b: int
    input_json: str
    ih: str
    tool_id: str
    tool_name: str
    tool_version: str
    tool_type: str
    requested: str
    target_repr: str
    cost: str
    status: str = ""
    reason: str = ""
    error_type: str = ""
    error_message: str = ""
    raw_input: str = ""
    output: str = N
    upstream: object = N
    attempts: int = 0
    queued_at: str = N
    started_at: str = N
    finished_at: str = N
    deadline_at: str = N
    exec_ms: str = N
    chars_out: int = 0
    output_size: object = N
    cached_from: str = N
    worker: str = ""
    # events at the time of the call, by its caller: (action, status, attempts, error_type, reason)
    events_now: list = field(default_factory=list)

    def summary(self, status, reason, error_type, attempts, content_hash) -> dict:
        """The ``after`` of one of its audit events."""
        return {
            "execution_id": self.eid,
            "tool": self.tool_name or self.requested,
            "tool_version": self.tool_version,
            "agent_id": self.agent_id,
            "principal": self.principal_name,
            "roles": self.roles,
            "status": status,
            "reason_code": reason,
            "error_type": error_type,
            "input_hash": self.ih,
            "attempts": attempts,
            "content_hash": content_hash,
        }

    def succeeded_output(self) -> None:
        self.output = '{"status_code":200,"body":{"items":%d,"total":%d.%02d,"next":null}}' % (
            self.b,
            self.a,
            self.b,
        )
        self.chars_out = self.output_size = len(self.output)

    def execution_row(self, created_at: str) -> str:
        """Its line of the executions COPY (columns as rows.EXEC_COLUMNS)."""
        chars_in = len(self.input_json) if self.input_json != N else len(self.raw_input)
        return (
            f"{self.eid}\t{self.tool_id}\t{self.tool_name}\t{self.tool_version}\t{self.tool_type}\t"
            f"{self.requested}\t{self.agent_id or N}\t{self.principal_id}\t{self.principal_name}\t"
            f"{self.role_id}\t{self.roles_json}\t{self.status}\t{self.reason}\t{self.input_json}\t"
            f"{self.raw_input}\t{self.ih}\t\t{self.output}\tf\t{self.output_size}\t\t"
            f"{self.error_type}\t{self.error_message}\t{self.upstream}\t{self.attempts}\t"
            f"{created_at}\t{self.queued_at}\t{self.started_at}\t{self.finished_at}\t"
            f"{self.deadline_at}\t{self.exec_ms}\t{chars_in}\t{self.chars_out}\t{self.cost}\t"
            f"{self.cached_from}\t{N}\t{self.request_id}\t{self.client}\t{self.worker}\n"
        )
