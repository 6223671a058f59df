"""MCP servers: where the tools of type ``mcp`` live, and how to reach them."""

from registry.models.mcp.server import (
    HTTP_TRANSPORTS,
    MCP_SERVER_NAME_PATTERN,
    MCPServer,
    MCPTransport,
)
from registry.models.mcp.stdio_commands import (
    allowed_stdio_commands,
    stdio_command_problem,
)
from registry.models.mcp.stdio_env import (
    ENV_REFUSED,
    ENV_VAR_PATTERN,
    REFUSED_ENV_NAMES,
    env_problem,
    refused_env_names,
    stdio_env_allowed,
    token_env_var_problem,
)

__all__ = [
    "ENV_REFUSED",
    "ENV_VAR_PATTERN",
    "HTTP_TRANSPORTS",
    "MCP_SERVER_NAME_PATTERN",
    "REFUSED_ENV_NAMES",
    "MCPServer",
    "MCPTransport",
    "allowed_stdio_commands",
    "env_problem",
    "refused_env_names",
    "stdio_command_problem",
    "stdio_env_allowed",
    "token_env_var_problem",
]
