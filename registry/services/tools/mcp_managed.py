"""Tools an MCP server owns: the link configs and which changes their managers may make."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q

from registry import access
from registry.hooks import config_spec
from registry.models import MCPServer, Tool
from registry.services.tools.field_checks import _check_namespace
from toolhub.exceptions import PermissionDenied

# What ties an ``mcp`` tool to a registered MCP server (whose stored token and
# environment its calls then use) and to one remote tool of it: the sync writes
# these. Anyone else who could set them could call any tool of any server with its
# credentials, past its grants and the server's tools_allowed/denied.
MCP_LINK_CONFIGS = ("server_id", "remote_tool_name", "server")
# Configs that lend a tool credentials the operator holds (TOOLHUB_DATABASE_ALIASES):
# like MCP links, only platform admins set them.
LENT_CREDENTIAL_CONFIGS = ("connection_alias",)
# Which inputs are callers' per-call secrets and where they go: removing the map,
# moving the destination and adding it back would send callers' secrets elsewhere.
PER_CALL_SECRET_CONFIGS = ("headers_input_map",)
# Metadata that decides how a tool fails when a control is down (fail closed).
RISK_METADATA = ("risk", "safety")
MCP_LINK_METADATA = ("mcp_server", "mcp_server_id", "remote_tool_name")
# Tool types whose definition says which program runs on the workers: only platform
# admins create or change such tools (their parameters and configs too).
ADMIN_ONLY_TYPES = ("command",)


def check_admin_only_type(actor, tool_type: str, *, new_type: str | None = None) -> None:
    """Only platform admins (and the system) create, change or retype a command tool."""
    if actor is None or access.is_platform_admin(actor):
        return
    if tool_type in ADMIN_ONLY_TYPES or new_type in ADMIN_ONLY_TYPES:
        raise PermissionDenied(
            "Only platform admins create or change command tools: they run a program on "
            "the workers.",
            details=[{"field": "type", "message": "Platform admins only."}],
        )


def fallback_remote_tool_name(tool_name: str, server_name: str) -> str:
    """The remote tool an ``mcp`` tool without ``remote_tool_name`` used to call: its
    own name without the ``<server>__`` prefix. Only read when the link is made, to
    store the answer; a call never derives it (a rename would move it)."""
    if server_name and tool_name.startswith(f"{server_name}__"):
        return tool_name[len(server_name) + 2 :]
    if not server_name and "__" in tool_name:
        return tool_name.split("__", 1)[1]
    return tool_name


def _linked_server_name(tool: Tool) -> str | None:
    """The name of the server an ``mcp`` tool is linked to (``""`` for an inline server
    without a name), or None when it is linked to none."""
    configs = {c.config_key: c for c in tool.configs.all()}
    if "server" in configs:
        inline = configs["server"].value
        return str(inline.get("name") or "") if isinstance(inline, dict) else ""
    server_id = configs["server_id"].value if "server_id" in configs else None
    server_id = server_id or (tool.tool_metadata or {}).get("mcp_server_id")
    if not server_id:
        return None
    try:
        server = MCPServer.objects.filter(pk=str(server_id).strip()).only("name").first()
    except (ValueError, TypeError, ValidationError):
        server = None
    return server.name if server is not None else ""


def _check_mcp_link(actor, tool: Tool, *, config_key: str | None = None, data=None) -> None:
    """Only platform admins (and the system: syncs, imports by command) change an MCP link."""
    if actor is None or access.is_platform_admin(actor):
        return
    changes = []
    if config_key in MCP_LINK_CONFIGS and tool.type == "mcp":
        changes.append(config_key)
    if data and "type" in data and (data["type"] == "mcp") != (tool.type == "mcp"):
        changes.append("type")
    if data and "tool_metadata" in data:
        old, new = tool.tool_metadata or {}, data["tool_metadata"] or {}
        changes += [f"tool_metadata.{k}" for k in MCP_LINK_METADATA if old.get(k) != new.get(k)]
    if changes:
        raise PermissionDenied(
            "Only platform admins may link a tool to an MCP server, change its remote tool "
            "or turn a tool into an MCP tool or back.",
            details=[{"field": f, "message": "Platform admins only."} for f in changes],
        )


def _check_managed_change(
    actor, tool: Tool, *, part: str, config_key: str | None = None, data=None
) -> None:
    """What a per-tool ``manage`` right does not cover (platform admins and the system may):

    * a name in a registered MCP server's namespace (``_check_namespace``);
    * configs that lend the operator's connections or route callers' per-call
      secrets, and the risk metadata that decides whether calls fail closed;
    * the parameters, configs and type of a tool under human approval: whether a
      call needs approval, and what an approved call does, depend on them (renaming
      the parameter an approval condition reads let every call through);
    * where a tool carrying secrets sends its calls (``destination`` keys, its
      type): the secrets would go along, to a server of the manager's choice; and
      how it sends them (``sends_credentials`` keys: ``auth_type``, the API key's
      header).
    """
    if actor is None or access.is_platform_admin(actor):
        return
    if data != {"is_active": False}:  # anyone who manages it may switch it off
        check_admin_only_type(actor, tool.type, new_type=(data or {}).get("type"))
    if data and data.get("name") not in (None, tool.name):
        _check_namespace(tool, str(data["name"]))
    if config_key in LENT_CREDENTIAL_CONFIGS:
        raise PermissionDenied(
            f"Only platform admins set '{config_key}': it lends the tool a connection the "
            "operator holds.",
            details=[{"field": "config_key", "message": "Platform admins only."}],
        )
    if config_key in PER_CALL_SECRET_CONFIGS:
        raise PermissionDenied(
            f"Only platform admins change '{config_key}': it decides where callers' "
            "per-call secrets go.",
            details=[{"field": "config_key", "message": "Platform admins only."}],
        )
    if data and "tool_metadata" in data:
        old, new = tool.tool_metadata or {}, data["tool_metadata"] or {}
        moved = [k for k in RISK_METADATA if old.get(k) != new.get(k)]
        if moved:
            raise PermissionDenied(
                "Only platform admins change a tool's risk: it decides whether its calls "
                "are refused when a control cannot be checked.",
                details=[
                    {"field": f"tool_metadata.{k}", "message": "Platform admins only."}
                    for k in moved
                ],
            )
    retyped = bool(data) and "type" in data and data["type"] != tool.type
    if tool.requires_approval and (part in ("parameter", "config") or retyped):
        raise PermissionDenied(
            f"'{tool.name}' requires human approval: only platform admins change its "
            "parameters, configs and type, since what needs approval depends on them."
        )
    resends = False
    if config_key is not None:
        spec = config_spec(tool.type)
        key = spec.keys.get(config_key) if spec is not None else None
        moves = key is not None and key.destination
        resends = key is not None and key.sends_credentials
    else:
        moves = retyped
    if (moves or resends) and _carries_secrets(tool, config_key):
        what = f"config '{config_key}'" if config_key else "type"
        how = "how its credentials are sent" if resends else "where its calls go"
        raise PermissionDenied(
            f"'{tool.name}' holds secret configs or takes per-call secrets: only platform "
            f"admins change {how} ({what}), since the secrets go with them."
        )


def _carries_secrets(tool: Tool, changing: str | None) -> bool:
    """Whether calls of ``tool`` carry secrets: secret configs (other than the one being
    replaced) or per-call secret inputs (``headers_input_map``)."""
    configs = tool.configs.exclude(config_key=changing) if changing else tool.configs.all()
    return configs.filter(Q(is_secret=True) | Q(config_key__in=PER_CALL_SECRET_CONFIGS)).exists()
