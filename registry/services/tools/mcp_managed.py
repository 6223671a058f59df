"""Which row of ``registry.policy`` a change of a tool takes, and the MCP link configs."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q

from registry import policy
from registry.hooks import config_spec
from registry.models import MCPServer, Tool
from registry.services.tools.field_checks import _check_namespace

# What ties an ``mcp`` tool to a registered MCP server (whose stored token and
# environment its calls then use) and to one remote tool of it: the sync writes
# these. Anyone else who could set them could call any tool of any server with its
# credentials, past its grants and the server's tools_allowed/denied (``registry.policy``
# makes them a platform admin's, with the rest of what a tool runs).
MCP_LINK_CONFIGS = ("server_id", "remote_tool_name", "server")


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


def check_tool_change(actor, tool: Tool, data: dict) -> None:
    """``registry.policy`` for a change of ``tool``'s own fields (before it is made)."""
    if data.get("name") not in (None, tool.name) and not policy.policy_allows(
        actor=actor, action="mcp_server.write"
    ):
        _check_namespace(tool, str(data["name"]))
    policy.check_actions(
        actor=actor,
        tool=tool,
        actions=policy.tool_field_actions(tool, data),
        loosens=policy.tool_change_loosens(tool, data),
    )


def check_config_change(actor, tool: Tool, config_key: str, *, creating: bool = False) -> None:
    """``registry.policy`` for setting or deleting config ``config_key`` of ``tool``.

    While a tool is created (by someone its creation was allowed to), only what the
    creator's right does not cover is checked: linking an MCP server, lending a
    connection, routing per-call secrets."""
    if creating:
        if config_key in policy.RISK_CONFIGS:
            policy.policy_check(actor=actor, action="tool.risk", fields=["config_key"])
        if tool.type == "mcp" and config_key in MCP_LINK_CONFIGS:
            policy.policy_check(actor=actor, action="tool.what_runs", fields=["config_key"])
        return
    spec = config_spec(tool.type)
    key = spec.keys.get(config_key) if spec is not None else None
    actions = policy.config_actions(
        tool,
        config_key,
        destination=bool(key is not None and key.destination),
        sends_credentials=bool(key is not None and key.sends_credentials),
        carries_secrets=lambda: _carries_secrets(tool, config_key),
    )
    policy.check_actions(actor=actor, tool=tool, actions=actions)


def check_parameter_change(actor, tool: Tool, names=()) -> None:
    """``registry.policy`` for adding, changing or removing parameters ``names`` of ``tool``
    (a parameter a "what runs" config names as ``{placeholder}`` is what runs)."""
    actions = policy.parameter_actions(tool, {str(n) for n in names if n})
    policy.check_actions(actor=actor, tool=tool, actions=actions)


def _carries_secrets(tool: Tool, changing: str | None) -> bool:
    """Whether calls of ``tool`` carry secrets: secret configs (other than the one being
    replaced), per-call secret inputs (``headers_input_map``) or each caller's own token at
    an upstream provider (``upstream_provider``)."""
    configs = tool.configs.exclude(config_key=changing) if changing else tool.configs.all()
    carried = (*policy.PER_CALL_SECRET_CONFIGS, *policy.LENT_ACCOUNT_CONFIGS)
    return configs.filter(Q(is_secret=True) | Q(config_key__in=carried)).exists()
