"""Who may make which write: one table, checked by every write service first.

``POLICY`` names each write and what it takes: a platform right (``registry/rights.py``;
``ADMIN`` is "Grant access", which makes a platform admin) and/or a grant on the tool
written (``manage``). Where both are given, both are needed. A write that applies to
all tools (``tool`` None) and asks for a grant takes a platform admin instead.

Services call :func:`policy_check` before they write, whoever calls them (the API, the
admin, an importer, a sync); ``actor=None`` is the system (migrations, syncs run by
command) and may do anything. Views and admin pages ask :func:`policy_allows` to show
or hide a control; neither restates a rule.

Rows marked ``own_control`` are controls over callers' calls (approval, guards, rate
limits). An agent never loosens one that governs its own calls, even when the table
otherwise lets it: the service says whether a change loosens (``loosens=True``).

Which row a change of a tool takes (its fields, configs, parameters) is decided here
too, by :func:`tool_write_actions`: "what runs" (the type, an HTTP tool's base_url, a
Python tool's function, an MCP tool's server and remote tool, a database connection,
anything of a command tool) is a platform admin's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry import access
from registry.models import Action, Tool
from registry.rights import RIGHTS_BY_KEY
from toolhub.exceptions import PermissionDenied

ADMIN = "grant_access"  # the right that makes a platform admin
MANAGE = Action.MANAGE.value


@dataclass(frozen=True)
class Rule:
    """What one write takes. ``refusal`` may name the tool as ``{tool}``."""

    right: str | None  # a key of rights.RIGHTS_BY_KEY
    grant: str | None  # a grant the actor needs on the tool written
    refusal: str
    own_control: bool = False  # governs callers' calls: agents never loosen their own


POLICY: dict[str, Rule] = {
    "tool.create": Rule(
        "register_tools",
        None,
        "Only platform admins and the 'Register tools' right register tools.",
    ),
    "tool.edit": Rule(
        "edit_tools",
        MANAGE,
        "Changing '{tool}' takes the right 'Edit tool definitions' and a manage grant on it.",
    ),
    "tool.deactivate": Rule(None, MANAGE, "You may not manage '{tool}'."),
    "tool.delete": Rule("delete_tools", MANAGE, "Only platform admins may hard-delete tools."),
    "tool.what_runs": Rule(
        ADMIN,
        MANAGE,
        "Only platform admins change what '{tool}' runs (its type, where its calls go, "
        "its function, server or program).",
    ),
    "tool.risk": Rule(
        ADMIN,
        MANAGE,
        "Only platform admins change the risk of '{tool}' (whether its calls fail closed), "
        "lend it a connection the operator holds or say where callers' per-call secrets go.",
    ),
    "tool.credentials": Rule(
        ADMIN,
        MANAGE,
        "'{tool}' holds secret configs or takes per-call secrets: only platform admins "
        "change where its calls go or how its credentials are sent, since the secrets go "
        "with them.",
    ),
    "tool.approval": Rule(
        ADMIN, MANAGE, "Only platform admins may change a tool's approval settings.", True
    ),
    "tool.approved_definition": Rule(
        ADMIN,
        MANAGE,
        "'{tool}' requires human approval: only platform admins change its parameters, "
        "configs and type, since what needs approval depends on them.",
    ),
    "parameter.write": Rule(
        "edit_tools",
        MANAGE,
        "Changing the parameters of '{tool}' takes the right 'Edit tool definitions' and a "
        "manage grant on it.",
    ),
    "config.write": Rule(
        "edit_tools",
        MANAGE,
        "Changing the configs of '{tool}' takes the right 'Edit tool definitions' and a "
        "manage grant on it.",
    ),
    "grant.write": Rule(ADMIN, None, "Only platform admins grant and revoke access to tools."),
    "guard.write": Rule(ADMIN, None, "Only platform admins may change guards.", True),
    "rate_limit.write": Rule(
        "rate_limits",
        MANAGE,
        "Changing the rate limits of '{tool}' takes the right 'Set rate limits' and a "
        "manage grant on it.",
        True,
    ),
    "mcp_server.write": Rule(ADMIN, None, "Only platform admins register and change MCP servers."),
    "toolset.write": Rule(ADMIN, None, "Only platform admins may change toolsets."),
    "definition.decide": Rule(
        ADMIN, None, "Only platform admins approve or reject a tool's definition."
    ),
}
# Which rule a write of all tools (tool None) with a grant in its row falls back to.
ALL_TOOLS_REFUSAL = "Only platform admins may set {what} for all tools."
OWN_CONTROL_REFUSAL = (
    "An agent may not loosen a control over its own calls ({what}): ask a platform admin."
)


def _holds_right(user, key: str) -> bool:
    if access.is_platform_admin(user):  # a platform admin holds every right
        return True
    if key == ADMIN or not (user.is_authenticated and user.is_active):
        return False
    return all(user.has_perm(label) for label in RIGHTS_BY_KEY[key].permissions)


def _is_agent(user) -> bool:
    from registry.models import Agent

    return Agent.objects.filter(user_id=user.pk).exists()


def _governs_own_calls(actor, tool: Tool | None) -> bool:
    """Whether a control on ``tool`` (all tools when None) applies to calls ``actor`` makes."""
    if not _is_agent(actor):
        return False
    return tool is None or access.can(actor, Action.EXECUTE, tool)


def _refusal(action: str, tool: Tool | None, fields) -> PermissionDenied | None:
    rule = POLICY[action]
    name = tool.name if tool is not None else "all tools"
    details = [{"field": f, "message": "Not yours to change."} for f in fields] or None
    return PermissionDenied(rule.refusal.format(tool=name), details=details)


def policy_refusal(
    *, actor, action: str, tool: Tool | None = None, loosens: bool = False, fields=()
) -> PermissionDenied | None:
    """Why ``actor`` may not make the write ``action`` (None when it may)."""
    rule = POLICY[action]
    if actor is None:
        return None
    if rule.grant and tool is None and rule.right != ADMIN and not access.is_platform_admin(actor):
        what = action.split(".")[0].replace("_", " ") + "s"
        return PermissionDenied(ALL_TOOLS_REFUSAL.format(what=what))
    if rule.grant and tool is not None and not access.can(actor, rule.grant, tool):
        return PermissionDenied(f"You may not {rule.grant} '{tool.name}'.")
    if rule.right and not _holds_right(actor, rule.right):
        return _refusal(action, tool, fields)
    if rule.own_control and loosens and _governs_own_calls(actor, tool):
        what = action.split(".")[0].replace("_", " ")
        return PermissionDenied(OWN_CONTROL_REFUSAL.format(what=what), code="own_control")
    return None


def policy_check(
    *, actor, action: str, tool: Tool | None = None, loosens: bool = False, fields=()
) -> None:
    """Raise ``PermissionDenied`` unless ``actor`` may make the write ``action``."""
    refusal = policy_refusal(actor=actor, action=action, tool=tool, loosens=loosens, fields=fields)
    if refusal is not None:
        raise refusal


def policy_allows(*, actor, action: str, tool: Tool | None = None, loosens: bool = False) -> bool:
    """For faces (admin pages, API hints): may ``actor`` make the write ``action``?"""
    return policy_refusal(actor=actor, action=action, tool=tool, loosens=loosens) is None


# Which row a change of a tool takes.

APPROVAL_FIELDS = ("requires_approval", "approval_condition", "approval_ttl_seconds")
# Config keys that say what a tool runs, per type (a command tool: every key).
WHAT_RUNS_CONFIGS = {
    "http": ("base_url", "endpoint"),
    "database": ("connection_string", "connection_alias"),
    "mcp": ("server", "server_id", "remote_tool_name"),
    "python": ("function",),
}
ADMIN_ONLY_TYPES = ("command",)  # their whole definition is what runs (a program)
# Configs that lend the operator's connections (TOOLHUB_DATABASE_ALIASES), and that say
# where callers' per-call secrets go: removing the map, moving the destination and adding
# it back would send them elsewhere.
LENT_CREDENTIAL_CONFIGS = ("connection_alias",)
PER_CALL_SECRET_CONFIGS = ("headers_input_map",)
RISK_CONFIGS = LENT_CREDENTIAL_CONFIGS + PER_CALL_SECRET_CONFIGS
RISK_METADATA = ("risk", "safety")  # decides whether calls fail closed
MCP_LINK_METADATA = ("mcp_server", "mcp_server_id", "remote_tool_name")
# The order refusals are looked for in: the most specific reason first.
_ORDER = (
    "tool.what_runs",
    "tool.credentials",
    "tool.risk",
    "tool.approval",
    "tool.approved_definition",
    "parameter.write",
    "config.write",
    "tool.edit",
    "tool.deactivate",
)


def python_function_unstored(tool: Tool) -> bool:
    """A Python tool without a ``function`` config (one the migration missed): its name
    would say what runs, so renaming it is changing what runs."""
    return tool.type == "python" and not tool.configs.filter(config_key="function").exists()


def _field_action(tool: Tool, field: str, value: Any) -> str:
    if field in APPROVAL_FIELDS:
        return "tool.approval"
    if field == "type":
        return "tool.what_runs"
    if field == "name" and python_function_unstored(tool):
        return "tool.what_runs"
    if field == "is_active":
        return "tool.edit" if value else "tool.deactivate"
    return "tool.edit"


def _metadata_actions(tool: Tool, new: Any) -> dict[str, list[str]]:
    old, new = tool.tool_metadata or {}, new if isinstance(new, dict) else {}
    moved = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    actions: dict[str, list[str]] = {}
    for key in sorted(moved):
        if key in MCP_LINK_METADATA:
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
    new_type = data.get("type", tool.type)
    if (tool.type in ADMIN_ONLY_TYPES or new_type in ADMIN_ONLY_TYPES) and set(actions) - {
        "tool.deactivate"
    }:
        actions.setdefault("tool.what_runs", []).append("type")
    if tool.requires_approval and "type" in actions.get("tool.what_runs", ()):
        actions.setdefault("tool.approved_definition", []).append("type")
    return actions


def config_actions(
    tool: Tool, key: str, *, sends_credentials: bool, destination: bool, carries_secrets
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
    if key in WHAT_RUNS_CONFIGS.get(tool.type, ()):
        return {"tool.what_runs": field}
    if tool.requires_approval:
        return {"tool.approved_definition": field}
    return {"config.write": field}


def parameter_actions(tool: Tool) -> dict[str, list[str]]:
    if tool.type in ADMIN_ONLY_TYPES:
        return {"tool.what_runs": []}
    if tool.requires_approval:
        return {"tool.approved_definition": []}
    return {"parameter.write": []}


def approval_loosens(tool: Tool, data: dict[str, Any]) -> bool:
    """Anything but turning approval on loosens (or may loosen) the control."""
    changed = {f for f in APPROVAL_FIELDS if f in data and data[f] != getattr(tool, f)}
    return bool(changed) and not (changed == {"requires_approval"} and data["requires_approval"])


def check_actions(*, actor, tool: Tool, actions: dict[str, list[str]], loosens=False) -> None:
    """``policy_check`` each action a change takes, the most specific first."""
    for action in sorted(actions, key=_ORDER.index):
        policy_check(
            actor=actor,
            action=action,
            tool=tool,
            loosens=loosens and POLICY[action].own_control,
            fields=actions[action],
        )
