"""The fields a tool, parameter and config show in audit before/after snapshots."""

from __future__ import annotations

from typing import Any

from registry.models import Tool, ToolConfig, ToolParameter
from registry.models.tools import TOOL_FIELDS

PARAMETER_FIELDS = (
    "name",
    "parameter_type",
    "type",
    "required",
    "description",
    "default",
    "json_schema",
    "position",
)


# Snapshots: what the audit log keeps of an object (secrets masked).


def tool_snapshot(tool: Tool) -> dict[str, Any]:
    data = {field: getattr(tool, field) for field in TOOL_FIELDS}
    data["id"] = str(tool.pk)
    return data


def parameter_snapshot(param: ToolParameter) -> dict[str, Any]:
    data = {field: getattr(param, field) for field in PARAMETER_FIELDS}
    data.update(id=str(param.pk), tool_id=str(param.tool_id), has_default=param.has_default)
    return data


def config_snapshot(config: ToolConfig) -> dict[str, Any]:
    return {
        "id": str(config.pk),
        "tool_id": str(config.tool_id),
        "config_key": config.config_key,
        "is_secret": config.is_secret,
        "config_value": config.display_value,
    }
