"""Idempotent upserts of whole tools, for importers and syncs.

``tool_upsert`` compares what is asked for with what is stored and writes only
the differences, through the tool services (so every change is audited and
nothing is audited when nothing changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from registry.canonical import canonical_json as canonical
from registry.models import Tool, ToolParameter
from registry.models.tools import ParameterKind
from registry.services import tools as tool_services
from registry.services.validation import raise_invalid

_ROW_FIELDS = ("type", "required", "description", "json_schema", "position")
KEEP_SECRET = object()  # a secret config named without a value: keep what is stored


@dataclass
class UpsertResult:
    tool: Tool
    action: str  # "created" | "updated" | "unchanged"
    changes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _merged_metadata(current: dict, patch: dict | None) -> dict:
    merged = dict(current or {})
    for key, value in (patch or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _normalized_row(row: dict, kind: str) -> dict:
    out = {
        "name": row["name"],
        "parameter_type": kind,
        "type": row.get("type", "string"),
        "required": bool(row.get("required", False)),
        "description": row.get("description") or "",
        "json_schema": row.get("json_schema") or {},
        "has_default": "default" in row,
        "default": row.get("default"),
    }
    if "position" in row:
        out["position"] = row["position"]
    return out


def _assign_positions(desired: list[dict], existing: dict[str, ToolParameter]) -> None:
    """Keep stored positions when the order asked for is already the stored order.

    Positions 0, 1, 2… in list order (a schema's properties, an export) say only
    the order, like no positions at all: stored positions in that same order
    stay as they are (a re-import of an export changes nothing).
    """
    positions = [row.get("position") for row in desired]
    if positions == list(range(len(desired))):
        for row in desired:
            del row["position"]
    elif all(position is not None for position in positions):
        return
    names = [row["name"] for row in desired]
    stored = sorted(
        (p for p in existing.values() if p.name in names), key=lambda p: (p.position, p.name)
    )
    same_order = len(stored) == len(names) and [p.name for p in stored] == names
    positions_ok = same_order and len({p.position for p in stored}) in (len(stored), 1)
    for index, row in enumerate(desired):
        if "position" in row:
            continue
        row["position"] = existing[row["name"]].position if positions_ok else index


def _row_differs(param: ToolParameter, row: dict) -> list[str]:
    changed = [f for f in _ROW_FIELDS if canonical(getattr(param, f)) != canonical(row[f])]
    if param.has_default != row["has_default"] or (
        row["has_default"] and canonical(param.default) != canonical(row["default"])
    ):
        changed.append("default")
    return changed


def _sync_parameters(*, actor, tool: Tool, kind: str, rows: list[dict]) -> list[str]:
    existing = {p.name: p for p in tool.parameters.filter(parameter_type=kind)}
    desired = [_normalized_row(r, kind) for r in rows]
    names = [r["name"] for r in desired]
    if len(set(names)) != len(names):
        raise_invalid(
            [
                {
                    "field": f"{kind}_parameters",
                    "message": "Parameter names repeat.",
                    "code": "duplicate",
                }
            ]
        )
    _assign_positions(desired, existing)
    changes = []
    for name, param in existing.items():
        if name not in names:
            tool_services.parameter_delete(actor=actor, parameter=param)
            changes.append(f"{kind} parameter {name} removed")
    for row in desired:
        param = existing.get(row["name"])
        if param is None:
            data = {k: v for k, v in row.items() if k != "has_default"}
            if not row["has_default"]:
                data.pop("default")
            tool_services.parameter_create(actor=actor, tool=tool, **data)
            changes.append(f"{kind} parameter {row['name']} added")
            continue
        differs = _row_differs(param, row)
        if differs:
            data = {f: row[f] for f in _ROW_FIELDS}
            data["has_default"] = row["has_default"]
            data["default"] = row["default"] if row["has_default"] else None
            tool_services.parameter_update(actor=actor, parameter=param, data=data)
            changes.append(f"{kind} parameter {row['name']} changed ({', '.join(differs)})")
    return changes


def _check_config(tool: Tool, where: str, key: str, value: Any, *, secret: bool) -> None:
    """Refuse a value the tool's executor cannot use, naming where it was given
    (``configs/<key>`` or ``secret_configs/<key>``, as an importer's document has it)."""
    message = tool_services.config_problem(tool.type, key, value, secret=secret)
    if message:
        raise_invalid([{"field": f"{where}/{key}", "message": message, "code": "invalid_config"}])


def _sync_configs(
    *, actor, tool: Tool, plain: dict[str, Any] | None, secret: dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    existing = {c.config_key: c for c in tool.configs.all()}
    changes: list[str] = []
    warnings: list[str] = []
    for key, value in (plain or {}).items():
        config = existing.get(key)
        if config is not None and config.is_secret:
            raise_invalid(
                [
                    {
                        "field": f"configs.{key}",
                        "message": "This config is secret; give it under secret_configs.",
                        "code": "secret_config",
                    }
                ]
            )
        if config is not None and canonical(config.plain_value) == canonical(value):
            continue
        _check_config(tool, "configs", key, value, secret=False)
        tool_services.config_set(
            actor=actor, tool=tool, config_key=key, config_value=value, is_secret=False
        )
        changes.append(f"config {key} {'set' if config is None else 'changed'}")
    for key, value in (secret or {}).items():
        config = existing.get(key)
        if value is KEEP_SECRET:
            if config is None:
                warnings.append(f"secret config {key} has no value yet: set it in the admin or API")
            elif not config.is_secret:
                tool_services.config_set(
                    actor=actor,
                    tool=tool,
                    config_key=key,
                    config_value=config.value,
                    is_secret=True,
                )
                changes.append(f"config {key} made secret")
            continue
        if config is not None and config.is_secret and canonical(config.value) == canonical(value):
            continue
        _check_config(tool, "secret_configs", key, value, secret=True)
        tool_services.config_set(
            actor=actor, tool=tool, config_key=key, config_value=value, is_secret=True
        )
        changes.append(f"secret config {key} {'set' if config is None else 'changed'}")
    return changes, warnings


@transaction.atomic
def tool_upsert(
    *,
    actor,
    name: str,
    type: str | None = None,
    tool: Tool | None = None,
    fields: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    parameters: list[dict] | None = None,
    output_parameters: list[dict] | None = None,
    configs: dict[str, Any] | None = None,
    secret_configs: dict[str, Any] | None = None,
    default_type: str | None = None,
) -> UpsertResult:
    """Create the tool ``name`` or bring the stored one in line with what is given.

    ``tool`` is the stored tool to update (found by the caller, e.g. an MCP
    tool by its server and remote name, so it can be renamed to ``name``);
    without it the tool is looked up by ``name``. ``None`` arguments leave that
    part alone; ``metadata`` is merged key by key (a ``None`` value removes the
    key); ``parameters`` / ``output_parameters`` are the complete row lists of
    that kind (rows not listed are removed); ``configs`` / ``secret_configs``
    set the keys they list and leave other keys alone (a secret given as
    ``KEEP_SECRET`` only checks that it exists). ``default_type`` is the type
    of a new tool when ``type`` is not given.
    """
    fields = dict(fields or {})
    settable = set(tool_services.TOOL_FIELDS) - {"name", "type", "tool_metadata"}
    if set(fields) - settable:
        raise TypeError(f"fields may not set {sorted(set(fields) - settable)}")
    if tool is None:
        tool = Tool.objects.filter(name=name).first()
    if tool is None:
        tool_type = type or default_type
        if not tool_type:
            raise_invalid(
                [{"field": "type", "message": "A new tool needs a type.", "code": "required"}]
            )
        created = tool_services.tool_create(
            actor=actor,
            name=name,
            type=tool_type,
            tool_metadata=_merged_metadata({}, metadata),
            **fields,
        )
        result = UpsertResult(tool=created, action="created")
        _, result.warnings = _apply_children(
            actor=actor,
            tool=created,
            parameters=parameters,
            output_parameters=output_parameters,
            configs=configs,
            secret_configs=secret_configs,
        )
        return result

    data: dict[str, Any] = {}
    if name != tool.name:
        data["name"] = name
    if type and type != tool.type:
        data["type"] = type
    for key, value in fields.items():
        if canonical(getattr(tool, key)) != canonical(value):
            data[key] = value
    merged = _merged_metadata(tool.tool_metadata, metadata)
    if canonical(merged) != canonical(tool.tool_metadata or {}):
        data["tool_metadata"] = merged
    changes = [f"{key} changed" for key in data]
    if data:
        # A new type is checked against the configs once they are written, below.
        tool = tool_services.tool_update(actor=actor, tool=tool, data=data, _check_configs=False)
    child_changes, warnings = _apply_children(
        actor=actor,
        tool=tool,
        parameters=parameters,
        output_parameters=output_parameters,
        configs=configs,
        secret_configs=secret_configs,
    )
    if "type" in data:
        tool_services.check_tool_configs(tool)
    changes += child_changes
    return UpsertResult(
        tool=tool, action="updated" if changes else "unchanged", changes=changes, warnings=warnings
    )


def _apply_children(
    *, actor, tool, parameters, output_parameters, configs, secret_configs
) -> tuple[list[str], list[str]]:
    changes: list[str] = []
    if parameters is not None:
        changes += _sync_parameters(
            actor=actor, tool=tool, kind=ParameterKind.INPUT, rows=parameters
        )
    if output_parameters is not None:
        changes += _sync_parameters(
            actor=actor, tool=tool, kind=ParameterKind.OUTPUT, rows=output_parameters
        )
    config_changes, warnings = _sync_configs(
        actor=actor, tool=tool, plain=configs, secret=secret_configs
    )
    return changes + config_changes, warnings
