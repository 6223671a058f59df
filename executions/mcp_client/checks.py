"""What is checked before any connection: the egress guard for URLs, the allow-list for stdio commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from executions.mcp_client.errors import (
    MCPClientError,
    MCPConfigError,
    MCPConnectionError,
    MCPEgressDenied,
)
from executions.mcp_client.limits import EgressCheck
from executions.mcp_client.spec import MCPServerSpec

# --------------------------------------------------------------------------- checks


def _default_egress_check(url: str) -> Any:
    """Run ``executions.egress.check_url`` when that module exists; allow otherwise."""
    try:
        from executions.egress import check_url
    except ImportError:
        return None
    return check_url(url)


def _run_egress_check(url: str, egress_check: EgressCheck | None) -> None:
    """Refuse the URL unless the egress check passes (it raises, or returns False, to refuse).

    A host that cannot be resolved is a connection problem, not a refusal.
    """
    check = _default_egress_check if egress_check is None else egress_check
    try:
        verdict = check(url)
    except MCPClientError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "HostResolutionError" or isinstance(exc, OSError):
            raise MCPConnectionError(f"cannot reach the MCP server: {exc}") from exc
        raise MCPEgressDenied(f"egress to the MCP server is not allowed: {exc}") from exc
    if verdict is False:
        raise MCPEgressDenied("egress to the MCP server is not allowed")


def allowed_stdio_commands() -> list[str]:
    try:
        from django.conf import settings

        if not settings.configured:
            return []
    except ImportError:
        return []
    from registry.models.mcp import allowed_stdio_commands as allowed

    return allowed()


def check_stdio_command(command: str, args: list[str] | tuple[str, ...] = ()) -> None:
    """Raise ``MCPConfigError`` unless ``command`` (with ``args``) is on
    ``TOOLHUB_MCP_STDIO_COMMANDS`` (``registry.models.mcp.stdio_command_problem``,
    checked when a server is saved, and here again: the list may have narrowed)."""
    from registry.models.mcp import stdio_command_problem

    problem = stdio_command_problem(command, args, allowed=allowed_stdio_commands())
    if problem:
        raise MCPConfigError(problem)


def check_stdio_env(env: Mapping[str, str]) -> None:
    """Raise ``MCPConfigError`` for variables the environment may not set
    (``registry.models.mcp.refused_env_names``), also for servers saved before the rule."""
    from registry.models.mcp import refused_env_names

    refused = refused_env_names(env)
    if refused:
        raise MCPConfigError(
            f"the stdio server's environment may not set {', '.join(refused)} "
            "(see TOOLHUB_MCP_STDIO_ENV_VARS)"
        )


def _prepare(
    spec: MCPServerSpec | Mapping[str, Any], egress_check: EgressCheck | None
) -> MCPServerSpec:
    spec = MCPServerSpec.from_mapping(spec) if not isinstance(spec, MCPServerSpec) else spec
    spec.validate()
    if spec.transport == "stdio":
        check_stdio_command(spec.command or "", spec.args)
        check_stdio_env(spec.env)
    else:
        _run_egress_check(spec.url or "", egress_check)
    return spec
