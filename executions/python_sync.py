"""Sync the registered Python functions into the registry: ``python_tools_sync(*, actor)``.

One ``python`` tool per function registered with ``@tool``
(``executions.python_tools.registry``), named like the function: description,
``version``, ``category`` (and the decorator's other JSON metadata) in
``tool_metadata``, input parameters from ``RegisteredTool.parameters()``, config
``function`` = the registered name. Python tools whose function is no longer
registered are deactivated (``python_sync_state`` marks them, so they come back
when the function does). Idempotent: a second run changes and audits nothing.

A parameter that also accepts ``None`` keeps its one type; a ``None`` default is
dropped (leaving the value out means the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from executions.jsonsafe import json_safe
from registry import schema as schema_mod
from registry.models import Tool
from registry.models.tools import ToolType
from registry.services.catalog import tool_upsert
from registry.services.tools import tool_update
from toolhub.exceptions import ToolHubError

META_STATE = "python_sync_state"


@dataclass
class PythonSyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{len(self.created)} created",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.deactivated)} deactivated",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return "Python tools: " + ", ".join(parts)


def _rows(entry) -> list[dict[str, Any]]:
    rows = []
    for position, raw in enumerate(entry.parameters()):
        row = {k: v for k, v in raw.items() if k != "nullable"}
        row["position"] = position
        if "default" in row and schema_mod.default_errors(
            row["type"], row.get("json_schema") or {}, row["default"]
        ):
            row.pop("default")
        rows.append(row)
    return rows


def _function_name(tool: Tool) -> str:
    for config in tool.configs.all():
        if config.config_key == "function" and not config.is_secret and config.plain_value:
            return str(config.plain_value)
    return ""  # none stored: nothing runs (the executor never goes by the tool's name)


@transaction.atomic
def python_tools_sync(*, actor, registry=None) -> PythonSyncReport:
    if registry is None:
        from executions.python_tools import registry  # registers the built-ins
    report = PythonSyncReport()
    for entry in registry.all():
        tool = Tool.objects.filter(name=entry.name).first()
        if tool is not None and tool.type != ToolType.PYTHON:
            report.skipped.append(
                {"tool": entry.name, "reason": f"the name is taken by a {tool.type} tool"}
            )
            continue
        metadata = {
            k: json_safe(v) for k, v in entry.metadata.items() if k != "version" and v is not None
        }
        metadata["source"] = "python"
        metadata[META_STATE] = None
        fields: dict[str, Any] = {"description": entry.description}
        if entry.version:
            fields["version"] = entry.version
        if tool is not None and (tool.tool_metadata or {}).get(META_STATE):
            fields["is_active"] = True
        try:
            with transaction.atomic():
                result = tool_upsert(
                    actor=actor,
                    name=entry.name,
                    type=ToolType.PYTHON,
                    tool=tool,
                    fields=fields,
                    metadata=metadata,
                    parameters=_rows(entry),
                    configs={"function": entry.name},
                )
        except ToolHubError as exc:
            report.skipped.append({"tool": entry.name, "reason": exc.message})
            continue
        getattr(report, result.action).append(result.tool.name)
    active = Tool.objects.filter(type=ToolType.PYTHON, is_active=True).prefetch_related("configs")
    for tool in active:
        if _function_name(tool) in registry:
            continue
        meta = {**(tool.tool_metadata or {}), META_STATE: "unregistered"}
        tool_update(actor=actor, tool=tool, data={"is_active": False, "tool_metadata": meta})
        report.deactivated.append(tool.name)
    return report
