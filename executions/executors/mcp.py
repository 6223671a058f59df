"""Executor for tools served by an MCP server (``tools/call`` over stdio, SSE or streamable HTTP).

``call.configs`` carries:

* ``server``: a mapping for ``MCPServerSpec`` (transport, url or command/args/env,
  auth_token, timeout_seconds, name);
* ``remote_tool_name``: the tool's name on the server (required: it is stored when
  the tool is linked, and never derived from the tool's own name);
* ``server_id``: the id of the registered MCP server a synced tool belongs to;
  the runner resolves it into ``server`` (``registry.services.mcp``).

``CONFIGS`` declares these keys and their values once: the executor reads them
through it, and the registry checks a config against it when it is saved.

The output is the server's result in MCP's own form: ``{"content": [...]}`` with
its blocks as sent (text, image, audio, resource, resource_link), plus
``structuredContent`` and ``isError`` when the server gave them. A result flagged
``isError`` is a failed call (``upstream_error``) whose message is the server's text.
An output past the tool's ``max_response_bytes`` is kept whole as an artifact (the
runner); one past ``TOOLHUB_MAX_ARTIFACT_BYTES`` fails the call. Nothing is redacted here: the runner removes the server's
bearer token and environment (``lent_secrets`` tells it them before the call
runs) and the call's other secrets, in their encoded and re-cased forms too,
from the output, the message and the metadata.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings

from executions import mcp_client
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.configs import (
    ConfigError,
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    got,
    text,
)
from executions.mcp_client import (
    MCPClientError,
    MCPConfigError,
    MCPConnectionError,
    MCPDefinitionChanged,
    MCPEgressDenied,
    MCPServerSpec,
    MCPTimeout,
    MCPToolError,
)

_RETRYABLE_STATUSES = (408, 425, 429)


def _server(value: Any) -> MCPServerSpec:
    if not isinstance(value, Mapping):
        raise ConfigValueError(got(value))
    try:
        return MCPServerSpec.from_mapping(value)
    except MCPConfigError as exc:
        raise ConfigValueError(str(exc)) from None


def _server_id(value: Any) -> str:
    try:
        return str(uuid.UUID(str(value).strip()))
    except ValueError:
        raise ConfigValueError(got(value)) from None


def _no_plain_server_secrets(value: Any) -> None:
    def part(name: str) -> Any:
        return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)

    if part("auth_token") or part("env"):
        raise ConfigValueError(
            "it holds an auth_token or env: mark the config secret, or register the server "
            "(/api/v1/mcp-servers) and link the tool to it"
        )


CONFIGS = ExecutorConfigs(
    "mcp",
    [
        ConfigKey(
            "server",
            "an MCP server as a JSON object (transport, url or command/args/env, "
            "auth_token, timeout_seconds, name)",
            _server,
            plain_check=_no_plain_server_secrets,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "remote_tool_name",
            "the tool's name on its MCP server",
            text,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "server_id",
            "the id (a UUID) of a registered MCP server",
            _server_id,
            destination=True,
            target=True,
        ),
    ],
)


def remote_tool_name(configs: Mapping[str, Any]) -> str:
    """The tool's name on the MCP server, from its ``remote_tool_name`` config (stored
    when the tool was linked). Never derived from the tool's own name: renaming a
    tool must not make it call another remote tool. Raises ``ConfigError``."""
    explicit = CONFIGS.read(configs, "remote_tool_name")
    if not explicit:
        raise ConfigError(
            CONFIGS.keys["remote_tool_name"],
            "it is not set; a platform admin sets it when linking the tool to its server",
        )
    return explicit


def lent_secrets(configs: Mapping[str, Any]) -> list[str]:
    """The server's bearer token and stdio environment values (the runner resolves a
    registered server into ``server``), for the runner's redaction."""
    return mcp_client.spec_secrets((configs or {}).get("server"))


class MCPExecutor:
    kind = "mcp"

    def __init__(self, *, egress_check: Callable[[str], Any] | None = None):
        # None: ``executions.egress.check_url`` when available (see mcp_client).
        self.egress_check = egress_check

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.monotonic()
        result = self._run(call, call.configs or {})
        result.latency_ms = (time.monotonic() - started) * 1000
        return result

    def _run(self, call: ToolCall, configs: Mapping[str, Any]) -> ExecutorResult:
        try:
            spec = CONFIGS.read(configs, "server")
            if spec is None:
                return _failed(ErrorType.CONFIG, "the MCP tool has no 'server' configuration")
            tool = remote_tool_name(configs)
        except ConfigError as exc:
            return _failed(ErrorType.CONFIG, str(exc))

        metadata: dict[str, Any] = {
            "transport": spec.transport,
            "server": spec.name,
            "remote_tool": tool,
        }
        timeout = (
            call.timeout_seconds if call.timeout_seconds and call.timeout_seconds > 0 else None
        )
        try:
            outcome = mcp_client.call_tool(
                spec,
                tool,
                dict(call.inputs or {}),
                timeout,
                egress_check=self.egress_check,
                pinned_definition_hash=call.pinned_definition_hash,
                cancellation=call.cancellation,
                listener=call.listener,
            )
        except MCPClientError as exc:
            return _client_failure(exc, metadata)
        return _outcome_result(outcome, metadata)


def _failed(error_type: str, message: str, **extra: Any) -> ExecutorResult:
    return ExecutorResult(ok=False, error_type=error_type, error_message=message, **extra)


def _client_failure(exc: MCPClientError, metadata: dict[str, Any]) -> ExecutorResult:
    """The client's error as the call's: its error type, and whether a retry may help."""
    message = str(exc)
    if isinstance(exc, MCPDefinitionChanged):
        # The runner quarantines the tool with the definition seen (executors write nothing).
        seen = {**metadata, "seen_definition": exc.definition}
        return _failed(ErrorType.DEFINITION_CHANGED, message, metadata=seen)
    if isinstance(exc, MCPConfigError):
        return _failed(ErrorType.CONFIG, message, metadata=metadata)
    if isinstance(exc, MCPEgressDenied):
        return _failed(ErrorType.EGRESS_DENIED, message, metadata=metadata)
    if isinstance(exc, MCPTimeout):
        return _failed(ErrorType.TIMEOUT, message, retryable=True, metadata=metadata)
    if isinstance(exc, MCPConnectionError) and exc.status is not None:
        # the server answered with an HTTP error status
        return _failed(
            ErrorType.UPSTREAM,
            message,
            upstream_status=exc.status,
            retryable=exc.status >= 500 or exc.status in _RETRYABLE_STATUSES,
            metadata=metadata,
        )
    if isinstance(exc, MCPToolError):
        return _failed(ErrorType.UPSTREAM, message, metadata=metadata)
    return _failed(ErrorType.CONNECTION, message, retryable=True, metadata=metadata)


def _outcome_result(outcome: mcp_client.CallOutcome, metadata: dict[str, Any]) -> ExecutorResult:
    metadata.update(outcome.metadata)
    output = outcome.as_output()
    size = len(json.dumps(output, default=str).encode())
    cap = settings.TOOLHUB_MAX_ARTIFACT_BYTES
    if size > cap:
        return _failed(
            ErrorType.UPSTREAM,
            f"the MCP tool's response ({size} bytes) is larger than ToolHub keeps "
            f"(TOOLHUB_MAX_ARTIFACT_BYTES, {cap} bytes)",
            metadata={**metadata, "response_bytes": size},
        )
    if outcome.is_error:
        return ExecutorResult(
            ok=False,
            output=output,
            error_type=ErrorType.UPSTREAM,
            error_message=outcome.error_message,
            metadata=metadata,
        )
    return ExecutorResult(ok=True, output=output, metadata=metadata)
