"""A tool's run configuration: its configs with secrets decrypted, and every secret value
a call of it uses (those the output and messages are redacted of)."""

from __future__ import annotations

from typing import Any

from executions.executors import executor_configs
from executions.executors.configs import ConfigValueError, RunConfigs
from executions.executors.mcp import remote_tool_name
from executions.redaction import secret_parts, secret_strings
from registry.models import Tool
from registry.services.mcp import mcp_server_for_tool, mcp_server_spec


def secret_values(secret_configs: list[Any], sealed: dict[str, Any]) -> tuple[str, ...]:
    """Every secret string of the call, with the parts of secret URLs and connection
    strings that are secrets on their own (``secret_parts``)."""
    values: list[str] = []
    for value in [*secret_configs, *sealed.values()]:
        for text in secret_strings(value):
            values.append(text)
            values.extend(secret_parts(text))
    return tuple(dict.fromkeys(v for v in values if v))


def texts(values: list[Any]) -> list[str]:
    """The strings of ``values`` (those a JSON text holds too)."""
    return [text for value in values for text in secret_strings(value) if text]


def _as_read(kind: str, key: str, value: Any) -> Any:
    """A config's value as the executor of ``kind`` reads it (JSON text parsed, numbers
    turned into text, white space stripped), or None when it does not read the key: the
    secrets to redact are the values the call uses, whatever form they were saved in."""
    declared = executor_configs(kind)
    if declared is None or key not in declared:
        return None
    try:
        return declared.read({key: value}, key)
    except ConfigValueError:
        return None


def configs_for(tool: Tool) -> tuple[dict[str, Any], list[Any]]:
    """The tool's configs (secrets decrypted) and the secret values among them (as saved
    and as the executor reads them), in one query."""
    configs: dict[str, Any] = {}
    secrets: list[Any] = []
    secret_keys: list[str] = []
    for config in tool.configs.all():
        configs[config.config_key] = config.value
        if config.is_secret:
            secrets.append(configs[config.config_key])
            secrets.append(_as_read(tool.type, config.config_key, configs[config.config_key]))
            secret_keys.append(config.config_key)
    if tool.type == "mcp":
        configs.update(mcp_configs(tool, configs))
    return RunConfigs(configs, secret_keys=secret_keys), secrets


def mcp_configs(tool: Tool, configs: dict[str, Any]) -> dict[str, Any]:
    """Resolve the MCP server a synced tool belongs to into the executor's ``server`` mapping."""
    if "server" in configs:
        return {}
    server = mcp_server_for_tool(tool)
    if server is None:
        return {}
    # The server's stored credentials serve only the tools its filters let through.
    remote = remote_tool_name(configs)
    if not server.offers(remote):
        raise ValueError(
            f"MCP server '{server.name}' does not offer '{remote}' (tools_allowed/tools_denied)."
        )
    return {"server": mcp_server_spec(server)}
