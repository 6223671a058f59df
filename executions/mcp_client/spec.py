"""How to reach one MCP server, and the secrets its spec holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from executions.mcp_client.errors import MCPConfigError
from executions.mcp_client.limits import (
    _TRANSPORT_ALIASES,
    DEFAULT_TIMEOUT_SECONDS,
    HTTP_TRANSPORTS,
    TRANSPORTS,
)
from executions.redaction import secret_strings

# --------------------------------------------------------------------------- spec


@dataclass
class MCPServerSpec:
    """How to reach one MCP server."""

    name: str = ""
    transport: str = "streamable_http"
    url: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> MCPServerSpec:
        """Build a spec from a plain mapping (model fields, tool configs); raises ``MCPConfigError``."""
        if isinstance(d, MCPServerSpec):
            return d
        if not isinstance(d, Mapping):
            raise MCPConfigError("the MCP server configuration must be a mapping")
        transport = _TRANSPORT_ALIASES.get(str(d.get("transport") or "streamable_http").lower())
        if transport is None:
            raise MCPConfigError(
                f"unknown MCP transport {d.get('transport')!r}; expected one of {', '.join(TRANSPORTS)}"
            )
        args = d.get("args") or []
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise MCPConfigError("MCP server 'args' must be a list of strings")
        env = d.get("env") or {}
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise MCPConfigError("MCP server 'env' must map strings to strings")
        timeout = d.get("timeout_seconds")
        try:
            timeout = DEFAULT_TIMEOUT_SECONDS if timeout in (None, "") else float(timeout)
        except (TypeError, ValueError):
            raise MCPConfigError("MCP server 'timeout_seconds' must be a number") from None
        token = d.get("auth_token")
        spec = cls(
            name=str(d.get("name") or ""),
            transport=transport,
            url=(str(d["url"]) if d.get("url") else None),
            command=(str(d["command"]) if d.get("command") else None),
            args=list(args),
            env=dict(env),
            auth_token=(str(token) if token else None),
            timeout_seconds=timeout,
        )
        spec.validate()
        return spec

    def validate(self) -> None:
        if self.transport not in TRANSPORTS:
            raise MCPConfigError(
                f"unknown MCP transport {self.transport!r}; expected one of {', '.join(TRANSPORTS)}"
            )
        if not self.timeout_seconds or self.timeout_seconds <= 0:
            raise MCPConfigError("MCP server 'timeout_seconds' must be positive")
        if self.transport in HTTP_TRANSPORTS:
            if not self.url:
                raise MCPConfigError(f"the {self.transport} transport needs a 'url'")
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise MCPConfigError("the MCP server 'url' must be an absolute http(s) URL")
            if parts.username or parts.password:
                raise MCPConfigError(
                    "the MCP server 'url' must not embed credentials; use 'auth_token'"
                )
        elif not self.command:
            raise MCPConfigError("the stdio transport needs a 'command'")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in an output or an error message."""
        return (self.auth_token,) if self.auth_token else ()


ENV_SECRET_MIN_CHARS = 8


def spec_secrets(spec: Any) -> list[str]:
    """The secrets of a server mapping (``mcp_server_spec``): its bearer token and the
    values of its stdio environment (which is stored write-only), for redaction."""
    if not isinstance(spec, Mapping):
        return []
    secrets = [str(spec["auth_token"])] if spec.get("auth_token") else []
    env = spec.get("env")
    if isinstance(env, Mapping):
        secrets += [
            text
            for v in env.values()
            if isinstance(v, str)
            for text in secret_strings(v)  # a JSON document's values too
            if len(text) >= ENV_SECRET_MIN_CHARS
        ]
    return secrets
