"""What an import did (or, in a dry run, would do)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry.importers.source import Problem

ACTIONS = ("created", "updated", "unchanged", "deactivated")


@dataclass
class ImportReport:
    format: str = ""
    dry_run: bool = False
    written: bool = False
    items: list[dict[str, Any]] = field(default_factory=list)
    unknown_keys: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, kind: str, name: str, action: str, changes: list[str] | None = None) -> None:
        self.items.append({"kind": kind, "name": name, "action": action, "changes": changes or []})

    def names(self, action: str, kind: str | None = None) -> list[str]:
        return [
            i["name"]
            for i in self.items
            if i["action"] == action and (kind is None or i["kind"] == kind)
        ]

    def counts(self) -> dict[str, int]:
        return {action: len(self.names(action)) for action in ACTIONS}

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "format": self.format,
            "dry_run": self.dry_run,
            "written": self.written,
            "counts": self.counts(),
            "items": self.items,
            "unknown_keys": [p.as_dict() for p in self.unknown_keys],
            "warnings": [p.as_dict() for p in self.warnings],
            "errors": [p.as_dict() for p in self.errors],
        }

    def text(self) -> str:
        """The report for a person (management commands, the admin page)."""
        lines = [f"Format: {self.format or 'unknown'}" + (" (dry run)" if self.dry_run else "")]
        for action in ACTIONS:
            items = [i for i in self.items if i["action"] == action]
            if not items:
                continue
            lines.append(f"{action.capitalize()} ({len(items)}):")
            for item in items:
                detail = f": {'; '.join(item['changes'])}" if item["changes"] else ""
                lines.append(f"  {item['kind']} {item['name']}{detail}")
        for title, problems in (
            ("Unknown keys (ignored)", self.unknown_keys),
            ("Warnings", self.warnings),
            ("Errors", self.errors),
        ):
            if problems:
                lines.append(f"{title} ({len(problems)}):")
                lines.extend(f"  {p}" for p in problems)
        if self.errors:
            lines.append("Nothing was written: fix the errors and import again.")
        elif self.dry_run:
            lines.append("Dry run: nothing was written.")
        return "\n".join(lines)
