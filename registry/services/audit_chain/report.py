"""What verification found: problems and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from registry.services.audit_chain.hashing import GENESIS


@dataclass
class Problem:
    # altered | broken_link | missing | unsealed | forged | forged_checkpoint
    # | export_altered | record_altered
    # | record_deleted | record_unaudited
    kind: str
    sequence: int | None
    event_id: int | None
    message: str
    # The record found altered, deleted or unaudited (``executions.execution`` and its
    # id), where the check knows it: the admin flags that record's page.
    target_type: str = ""
    target_id: str = ""


@dataclass
class VerifyReport:
    ok: bool = True
    checked: int = 0
    started_at_sequence: int = 0
    head_sequence: int = 0
    head_hash: str = GENESIS
    checkpoint: int | None = None
    problem: Problem | None = None
    warnings: list[str] = field(default_factory=list)
    # Every problem found beyond the chain walk (up to the limit asked for), when asked:
    # the records a verification run flags. ``problem`` is the first of all.
    findings: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = asdict(self)
        return data
