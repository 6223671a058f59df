"""The errors the MCP client raises: one family, one class per kind of failure."""

from __future__ import annotations

# --------------------------------------------------------------------------- errors


class MCPClientError(Exception):
    """Base class of the errors this module raises."""


class MCPConfigError(MCPClientError):
    """The server configuration is unusable (bad transport, URL, command not allowlisted…)."""


class MCPEgressDenied(MCPClientError):
    """The egress check refused the server's URL."""


class MCPConnectionError(MCPClientError):
    """Could not connect, the connection dropped, or the server process died.

    ``status`` carries the HTTP status when the server refused the connection
    with one (401/403 for a rejected token).
    """

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class MCPTimeout(MCPClientError):
    """The connection or the request did not complete in time."""


class MCPToolError(MCPClientError):
    """The server answered the request with a protocol (JSON-RPC) error."""

    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.code = code


class MCPDefinitionChanged(MCPClientError):
    """The server's listing shows the tool with another definition than the pinned one
    (or not at all): the call was not sent. ``definition`` is what the listing shows
    (``registry.definitions.remote_definition``), None when the tool is missing."""

    def __init__(self, message: str, *, definition: dict | None):
        super().__init__(message)
        self.definition = definition
