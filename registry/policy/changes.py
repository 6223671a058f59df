"""Which row of the table a change of a tool takes (its fields, configs, parameters)."""

from __future__ import annotations

import re
from typing import Any

from registry.hooks import config_spec
from registry.models import Tool
from registry.policy.table import POLICY, policy_check

# Which row a change of a tool takes.

APPROVAL_FIELDS = ("requires_approval", "approval_condition", "approval_ttl_seconds")
# Which config keys say what a tool runs (or where) is declared by each executor
# (``ConfigKey.target``), read here through ``registry.hooks.config_spec``.
_PLACEHOLDER = re.compile(r"\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}")
ADMIN_ONLY_TYPES = ("command",)  # their whole definition is what runs (a program)
# Configs that lend the operator's connections (TOOLHUB_DATABASE_ALIASES), and that say
# where callers' per-call secrets go: removing the map, moving the destination and adding
# it back would send them elsewhere.
# A tool naming an upstream provider (``upstream_provider``) is sent each caller's own
# token at that provider: which tool gets people's accounts is a platform admin's choice.
LENT_ACCOUNT_CONFIGS = ("upstream_provider",)
LENT_CREDENTIAL_CONFIGS = ("connection_alias", *LENT_ACCOUNT_CONFIGS)
PER_CALL_SECRET_CONFIGS = ("headers_input_map",)
RISK_CONFIGS = LENT_CREDENTIAL_CONFIGS + PER_CALL_SECRET_CONFIGS
RISK_METADATA = ("risk", "safety")  # decides whether calls fail closed
MCP_LINK_METADATA = ("mcp_server", "mcp_server_id", "remote_tool_name")
# What the OpenAPI import finds its earlier tools by (registry.importers.openapi): a
# tool marked with them becomes the imported operation on the next import.
IMPORTER_METADATA = ("openapi_namespace", "openapi_operation", "openapi_removed")
WHAT_RUNS_METADATA = MCP_LINK_METADATA + IMPORTER_METADATA
RESERVED_NAME_MARK = "__"  # <namespace>__<tool>: imported and synced tools' names
# The order refusals are looked for in: the most specific reason first.
_ORDER = (
    "tool.reserved_name",
    "tool.what_runs",
    "tool.credentials",
    "tool.risk",
    "tool.approval",
    "tool.concurrency",
    "tool.approved_definition",
    "parameter.write",
    "config.write",
    "tool.rename",
    "tool.edit",
    "tool.deactivate",
)


def target_configs(tool_type: str) -> frozenset[str]:
    """The config keys that say what a ``tool_type`` tool runs or where (its executor's
    declaration; none when the type has no executor)."""
    spec = config_spec(tool_type)
    if spec is None:
        return frozenset()
    return frozenset(name for name, key in spec.keys.items() if getattr(key, "target", False))


def _field_action(tool: Tool, field: str, value: Any) -> str:
    if field in APPROVAL_FIELDS:
        return "tool.approval"
    if field == "max_retries" and tool.requires_approval:
        return "tool.approval"  # one approval, several runs
    if field == "max_concurrency":
        return "tool.concurrency"
    if field == "type":
        return "tool.what_runs"
    if field == "name" and tool.type == "python":
        # The Python sync finds its tools by name and points them at the function of
        # that name; without a ``function`` config the name is what runs.
        return "tool.what_runs"
    if field == "name":
        return "tool.rename"
    if field == "is_active":
        return "tool.edit" if value else "tool.deactivate"
    return "tool.edit"


def _metadata_actions(tool: Tool, new: Any) -> dict[str, list[str]]:
    old, new = tool.tool_metadata or {}, new if isinstance(new, dict) else {}
    moved = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    actions: dict[str, list[str]] = {}
    for key in sorted(moved):
        if key in WHAT_RUNS_METADATA:
            action = "tool.what_runs"
        elif key in RISK_METADATA:
            action = "tool.risk"
        else:
            action = "tool.edit"
        actions.setdefault(action, []).append(f"tool_metadata.{key}")
    return actions


def tool_field_actions(tool: Tool, data: dict[str, Any]) -> dict[str, list[str]]:
    """``{action: fields}`` for a change of ``tool``'s own fields to ``data``."""
    actions: dict[str, list[str]] = {}
    for field, value in data.items():
        if value == getattr(tool, field):
            continue
        if field == "tool_metadata":
            for action, fields in _metadata_actions(tool, value).items():
                actions.setdefault(action, []).extend(fields)
            continue
        actions.setdefault(_field_action(tool, field, value), []).append(field)
    new_name = data.get("name", tool.name)
    if new_name != tool.name and reserved_name(tool, str(new_name)):
        actions.setdefault("tool.reserved_name", []).append("name")
    new_type = data.get("type", tool.type)
    if (tool.type in ADMIN_ONLY_TYPES or new_type in ADMIN_ONLY_TYPES) and set(actions) - {
        "tool.deactivate"
    }:
        actions.setdefault("tool.what_runs", []).append("type")
    if tool.requires_approval and "type" in actions.get("tool.what_runs", ()):
        actions.setdefault("tool.approved_definition", []).append("type")
    return actions


def config_actions(
    tool: Tool,
    key: str,
    *,
    sends_credentials: bool,
    destination: bool,
    carries_secrets,
) -> dict[str, list[str]]:
    """``{action: fields}`` for setting or deleting config ``key`` of ``tool``.

    ``carries_secrets`` is asked only when it matters (a query)."""
    field = ["config_key"]
    if tool.type in ADMIN_ONLY_TYPES:
        return {"tool.what_runs": field}
    if key in RISK_CONFIGS:
        return {"tool.risk": field}
    if (destination or sends_credentials) and carries_secrets():
        return {"tool.credentials": field}
    if key in target_configs(tool.type):
        return {"tool.what_runs": field}
    if tool.requires_approval:
        return {"tool.approved_definition": field}
    return {"config.write": field}


def reserved_name(tool: Tool | None, name: str) -> bool:
    """Whether ``name`` is ``<namespace>__<tool>`` and not the name of ``tool``'s own MCP
    server's namespace (a synced tool keeps its prefix)."""
    if RESERVED_NAME_MARK not in name:
        return False
    server = str(((tool.tool_metadata or {}) if tool is not None else {}).get("mcp_server") or "")
    return not (server and name.startswith(f"{server}{RESERVED_NAME_MARK}"))


def _placeholders_of(value: Any) -> set[str]:
    """The ``{name}`` placeholders in a config value (strings, lists, objects)."""
    if isinstance(value, str):
        return set(_PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list | tuple):
        return set().union(*(_placeholders_of(v) for v in value)) if value else set()
    return set()


def target_parameters(tool: Tool) -> set[str]:
    """The parameters a "what runs" config of ``tool`` names as ``{name}`` (an HTTP
    tool's host or path, an MCP link): their schema decides what runs or where."""
    keys = target_configs(tool.type)
    names: set[str] = set()
    for config in tool.configs.filter(config_key__in=keys):
        names |= _placeholders_of(config.value)
    return names


def parameter_actions(tool: Tool, names=()) -> dict[str, list[str]]:
    """``{action: fields}`` for adding, changing or removing parameters ``names`` of ``tool``."""
    if tool.type in ADMIN_ONLY_TYPES:
        return {"tool.what_runs": []}
    if tool.requires_approval:
        return {"tool.approved_definition": []}
    if set(names) & target_parameters(tool):
        return {"tool.what_runs": []}
    return {"parameter.write": []}


def approval_loosens(tool: Tool, data: dict[str, Any]) -> bool:
    """Anything but turning approval on loosens (or may loosen) the control; so does
    retrying an approved call more often."""
    retries = data.get("max_retries")
    if tool.requires_approval and isinstance(retries, int) and retries > tool.max_retries:
        return True
    changed = {f for f in APPROVAL_FIELDS if f in data and data[f] != getattr(tool, f)}
    return bool(changed) and not (changed == {"requires_approval"} and data["requires_approval"])


def concurrency_loosens(tool: Tool, data: dict[str, Any]) -> bool:
    """More calls at once, or no bound (None), than before."""
    if "max_concurrency" not in data or tool.max_concurrency is None:
        return False
    new = data["max_concurrency"]
    return new is None or (isinstance(new, int) and new > tool.max_concurrency)


def tool_change_loosens(tool: Tool, data: dict[str, Any]) -> set[str]:
    """The own-control rows a change of ``tool``'s fields to ``data`` loosens."""
    loosened = set()
    if approval_loosens(tool, data):
        loosened.add("tool.approval")
    if concurrency_loosens(tool, data):
        loosened.add("tool.concurrency")
    return loosened


def check_actions(
    *, actor, tool: Tool, actions: dict[str, list[str]], loosens: set[str] | bool = False
) -> None:
    """``policy_check`` each action a change takes, the most specific first; ``loosens``
    names the own-control rows the change loosens (True: all of them)."""
    for action in sorted(actions, key=_ORDER.index):
        loosened = loosens is True or (not isinstance(loosens, bool) and action in loosens)
        policy_check(
            actor=actor,
            action=action,
            tool=tool,
            loosens=loosened and POLICY[action].own_control,
            fields=actions[action],
        )
