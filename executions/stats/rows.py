"""The numbers of one group, bucket or total, and the row that carries them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from executions.models import Execution, ExecutionStatus

# Cost is answered as a fixed string with the column's decimals (6), whatever the
# database's SUM gives back (SQLite's carries float noise: 0.00400000000000000).
COST_SCALE = Decimal(1).scaleb(-Execution._meta.get_field("cost").decimal_places)


@dataclass
class Metrics:
    """The numbers of one group, bucket or total."""

    calls: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    p50_ms: float | None = None
    p95_ms: float | None = None
    cost: Decimal | None = None
    denials_by_reason: dict[str, int] | None = None

    def count(self, status: str) -> int:
        return self.by_status.get(status, 0)

    @property
    def succeeded(self) -> int:
        return self.count(ExecutionStatus.SUCCEEDED)

    @property
    def failed(self) -> int:
        return self.count(ExecutionStatus.FAILED)

    @property
    def denied(self) -> int:
        return self.count(ExecutionStatus.DENIED)

    @property
    def success_rate(self) -> float | None:
        finished = self.succeeded + self.failed
        return self.succeeded / finished if finished else None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "calls": self.calls,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "denied": self.denied,
            "success_rate": None if self.success_rate is None else round(self.success_rate, 6),
            "p50_ms": None if self.p50_ms is None else round(self.p50_ms, 3),
            "p95_ms": None if self.p95_ms is None else round(self.p95_ms, 3),
            "cost": f"{Decimal(self.cost or 0).quantize(COST_SCALE):f}",
            "by_status": {status: self.count(status) for status in ExecutionStatus.values},
        }
        if self.denials_by_reason is not None:
            data["denials_by_reason"] = dict(
                sorted(self.denials_by_reason.items(), key=lambda item: (-item[1], item[0]))
            )
        return data


@dataclass
class StatsRow:
    """One row of a grouping: its group (id and name), its bucket, its metrics."""

    group_id: str | None = None
    name: str | None = None
    bucket: datetime | None = None
    metrics: Metrics = field(default_factory=Metrics)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.bucket is not None:
            data["bucket"] = self.bucket.isoformat()
        else:
            data["id"] = self.group_id
            data["name"] = self.name
        data.update(self.metrics.as_dict())
        return data
