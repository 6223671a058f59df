"""Writes to a tool's parameters."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from registry import schema as schema_mod
from registry.models import Tool, ToolParameter
from registry.services.audit import audit_record
from registry.services.tools.definition import (
    PARAMETER_DEFINITION_FIELDS,
    _approved_definition_follows,
    _definition_changed,
)
from registry.services.tools.field_checks import _check_finite
from registry.services.tools.mcp_managed import check_parameter_change
from registry.services.tools.saving import _save
from registry.services.tools.snapshots import PARAMETER_FIELDS, parameter_snapshot
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict

# Parameters


def _validate_parameter(param: ToolParameter, prefix: str) -> None:
    def field(name):
        return f"{prefix}.{name}" if prefix else name

    _check_finite({"default": param.default, "json_schema": param.json_schema}, prefix)
    full_clean(param, exclude=["tool"], prefix=prefix)
    problems = [
        {"field": field("json_schema"), "message": m, "code": "invalid_schema"}
        for m in schema_mod.fragment_errors(param.json_schema)
    ]
    if not problems and param.has_default:
        problems = [
            {"field": field("default"), "message": m, "code": "invalid_default"}
            for m in schema_mod.default_errors(param.type, param.json_schema, param.default)
        ]
    if problems:
        raise_invalid(problems)


def _unique_parameter(param: ToolParameter, prefix: str) -> None:
    clash = ToolParameter.objects.filter(
        tool_id=param.tool_id, parameter_type=param.parameter_type, name=param.name
    ).exclude(pk=param.pk)
    if clash.exists():
        field = f"{prefix}.name" if prefix else "name"
        raise Conflict(
            f"Tool already has an {param.parameter_type} parameter named '{param.name}'.",
            code="duplicate_parameter",
            details=[{"field": field, "message": "Already in use.", "code": "unique"}],
        )


@transaction.atomic
def parameter_create(
    *, actor, tool: Tool, _prefix: str = "", _creating: bool = False, **data: Any
) -> ToolParameter:
    unknown = set(data) - set(PARAMETER_FIELDS)
    if unknown:
        raise TypeError(f"unknown parameter fields: {sorted(unknown)}")
    if not _creating:  # the tool's creation was checked (registry.policy)
        check_parameter_change(actor, tool, [data.get("name")])
    if "position" not in data and not _creating:
        # Added one at a time, parameters keep the order they were added in.
        last = (
            tool.parameters.filter(parameter_type=data.get("parameter_type", "input"))
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        data["position"] = 0 if last is None else last + 1
    has_default = "default" in data
    param = ToolParameter(tool=tool, has_default=has_default, **data)
    if param.json_schema is None:
        param.json_schema = {}
    _validate_parameter(param, _prefix)
    _unique_parameter(param, _prefix)
    _save(param, f"Duplicate parameter '{param.name}'.", "name", _prefix)
    if not _creating:  # tool_create: the tool row was written just now
        _definition_changed(tool.pk)
    audit_record(
        actor=actor, action="tool_parameter.created", target=param, after=parameter_snapshot(param)
    )
    return param


@transaction.atomic
def parameter_update(*, actor, parameter: ToolParameter, data: dict[str, Any]) -> ToolParameter:
    unknown = set(data) - set(PARAMETER_FIELDS) - {"has_default"}
    if unknown:
        raise TypeError(f"unknown parameter fields: {sorted(unknown)}")
    param = ToolParameter.objects.select_for_update().select_related("tool").get(pk=parameter.pk)
    check_parameter_change(actor, param.tool, [param.name, data.get("name")])
    before = parameter_snapshot(param)
    for field, value in data.items():
        setattr(param, field, value)
    if "default" in data and "has_default" not in data:
        param.has_default = True
    if not param.has_default:
        param.default = None
    if param.json_schema is None:
        param.json_schema = {}
    _validate_parameter(param, "")
    _unique_parameter(param, "")
    after = parameter_snapshot(param)
    if after == before:
        return param
    _save(param, f"Duplicate parameter '{param.name}'.", "name")
    if any(before.get(f) != after.get(f) for f in PARAMETER_DEFINITION_FIELDS):
        _definition_changed(param.tool_id)
    else:  # a description or position: the tool's page changed, not what a call does
        Tool.objects.filter(pk=param.tool_id).update(updated_at=timezone.now())
        _approved_definition_follows(param.tool_id)
    audit_record(
        actor=actor, action="tool_parameter.updated", target=param, before=before, after=after
    )
    return param


@transaction.atomic
def parameter_delete(*, actor, parameter: ToolParameter) -> None:
    check_parameter_change(actor, parameter.tool, [parameter.name])
    snapshot = parameter_snapshot(parameter)
    target_repr, target_id = str(parameter), str(parameter.pk)
    parameter.delete()
    _definition_changed(parameter.tool_id)
    audit_record(
        actor=actor,
        action="tool_parameter.deleted",
        target_type=ToolParameter._meta.label_lower,
        target_id=target_id,
        target_repr=target_repr,
        before=snapshot,
    )
