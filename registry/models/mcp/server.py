"""The MCP server model: where the tools of type ``mcp`` live, and how to reach them."""

from __future__ import annotations

import uuid
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from registry import crypto
from registry.models.mcp.stdio_env import ENV_VAR_PATTERN

MCP_SERVER_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,40}$"

# The fields of an MCP server its managers set in the clear, declared once: what the MCP
# services accept and the audit snapshot records, what the API shows and the admin form
# edits. The secrets (``env``, the auth token) are added by each of them, masked.
MCP_SERVER_FIELDS = (
    "name",
    "description",
    "transport",
    "url",
    "command",
    "args",
    "token_env_var",
    "tools_allowed",
    "tools_denied",
    "timeout_seconds",
    "max_concurrency",
    "is_enabled",
    "sync_interval_minutes",
    "tool_prefix",
)
# What a synced tool's name starts with, when the operator sets it: the characters of a
# tool name, and short enough to leave room for the upstream's own name.
MCP_TOOL_PREFIX_PATTERN = r"^[a-zA-Z0-9_-]{0,40}$"
mcp_tool_prefix_validator = RegexValidator(
    MCP_TOOL_PREFIX_PATTERN,
    "Use at most 40 characters: letters, digits, '_' or '-' (empty: no prefix).",
    code="invalid_prefix",
)
mcp_server_name_validator = RegexValidator(
    MCP_SERVER_NAME_PATTERN,
    "Use 1 to 40 characters: letters, digits, '_' or '-'.",
    code="invalid_name",
)


class MCPTransport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "Server-sent events (legacy)"
    STDIO = "stdio", "Standard input/output (local process)"


HTTP_TRANSPORTS = (MCPTransport.STREAMABLE_HTTP, MCPTransport.SSE)


def _string_list_errors(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "Must be a list of strings."
    return None


class MCPServer(models.Model):
    """An MCP server whose tools ToolHub governs; its ``name`` is the namespace of those tools.

    A sync (``executions.mcp_sync``) lists the server's tools and upserts one
    ``Tool`` of type ``mcp`` per tool, named ``<tool_prefix><tool>`` (by default
    ``<server>__<tool>``; see ``listed_prefix``) and marked with
    ``tool_metadata`` ``{"mcp_server", "mcp_server_id", "remote_tool_name"}`` and
    the configs ``remote_tool_name`` and ``server_id``. ``tools_allowed`` (empty:
    all) and ``tools_denied`` filter which tools are synced (exact names or
    ``fnmatch`` patterns).

    The bearer token is either stored encrypted (``encrypted_auth_token``,
    write-only everywhere, like secret tool configs) or read at call time from
    the environment variable named by ``token_env_var`` — never both.
    ``env`` is passed to a stdio server's process and is not treated as secret.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(
        max_length=40,
        unique=True,
        validators=[mcp_server_name_validator],
        help_text=(
            "Namespace of the server's tools: unless a tool prefix is set, they are named "
            "<name>__<tool>."
        ),
    )
    description = models.TextField(blank=True)
    transport = models.CharField(
        max_length=16, choices=MCPTransport.choices, default=MCPTransport.STREAMABLE_HTTP
    )
    url = models.CharField(
        max_length=2000, blank=True, help_text="http(s) URL, for the HTTP transports."
    )
    command = models.CharField(
        max_length=500,
        blank=True,
        help_text="Executable for stdio; it must be listed in TOOLHUB_MCP_STDIO_COMMANDS.",
    )
    args = models.JSONField(default=list, blank=True, help_text="List of strings (stdio).")
    # The stdio process's extra environment: one encrypted JSON object. Its values
    # often are credentials (a vendor's access token), so they are write-only like
    # the auth token; the names are shown.
    encrypted_env = models.TextField(blank=True, default="")
    encrypted_auth_token = models.TextField(blank=True, default="")
    token_env_var = models.CharField(
        max_length=128,
        blank=True,
        validators=[
            RegexValidator(ENV_VAR_PATTERN, "Not an environment variable name.", code="invalid")
        ],
        help_text=(
            "Name of an environment variable of the workers holding the bearer token (instead of"
            " storing it); TOOLHUB_MCP_TOKEN_ENV_VARS says which may be named (default *_MCP_TOKEN)."
        ),
    )
    tools_allowed = models.JSONField(
        default=list, blank=True, help_text="Tool names (or fnmatch patterns) to sync; empty: all."
    )
    tools_denied = models.JSONField(
        default=list, blank=True, help_text="Tool names (or fnmatch patterns) never synced."
    )
    timeout_seconds = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(3600)]
    )
    max_concurrency = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Most calls to this server at once; empty means no limit.",
    )
    is_enabled = models.BooleanField(default=True, db_index=True)
    sync_interval_minutes = models.PositiveIntegerField(
        default=60,
        validators=[MaxValueValidator(7 * 24 * 60)],
        help_text=(
            "Re-sync this server every so many minutes (Celery beat), to find changed tool "
            "definitions; 0: only when someone syncs it."
        ),
    )
    # Three states, so NULL is not "": None is "<name>__" (following a rename of the
    # server), "" is the upstream's own names, anything else is the operator's prefix.
    tool_prefix = models.CharField(  # noqa: DJ001
        max_length=40,
        null=True,
        blank=True,
        default=None,
        validators=[mcp_tool_prefix_validator],
        help_text=(
            "What the names of this server's tools start with. Not set: '<server name>__'. "
            "Empty: none (the upstream's own names). A name another tool holds is refused "
            "at sync, naming both tools."
        ),
    )
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_attempt_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_sync_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        verbose_name_plural = "MCP servers"

    def __str__(self) -> str:
        return self.name

    @property
    def listed_prefix(self) -> str:
        """What the names of the tools synced from this server start with."""
        return f"{self.name}__" if self.tool_prefix is None else self.tool_prefix

    def offers(self, remote_name: str) -> bool:
        """Whether the filters let ``remote_name`` through: allowed (an empty list allows
        all) and not denied; entries are exact names or fnmatch patterns."""
        allowed = self.tools_allowed or []
        if allowed and not any(fnmatchcase(remote_name, p) for p in allowed):
            return False
        return not any(fnmatchcase(remote_name, p) for p in self.tools_denied or [])

    # The stored token: write-only, decrypted only to build a connection spec.

    @property
    def has_auth_token(self) -> bool:
        return bool(self.encrypted_auth_token)

    def set_auth_token(self, token: str | None) -> None:
        self.encrypted_auth_token = crypto.encrypt_json(token, field="auth_token") if token else ""

    def stored_auth_token(self) -> str | None:
        """The decrypted stored token. Only the connection spec should read this."""
        if not self.encrypted_auth_token:
            return None
        return crypto.decrypt_json(self.encrypted_auth_token)

    # The stdio environment: names visible, values write-only.

    def stored_env(self) -> dict[str, str]:
        """The decrypted environment. Only the connection spec (and change checks) read this."""
        if not self.encrypted_env:
            return {}
        return crypto.decrypt_json(self.encrypted_env)

    @property
    def env_names(self) -> list[str]:
        return sorted(self.stored_env())

    def masked_env(self) -> dict[str, str]:
        """What people and the audit log see: each name with the mask for its value."""
        return {name: crypto.MASK for name in self.env_names}

    def set_env(self, env: dict[str, str]) -> list[str]:
        """Store ``env`` (already validated); return the names whose value was added,
        changed or removed. The mask as a value keeps that variable's stored value."""
        old = self.stored_env()
        new = {name: old[name] if value == crypto.MASK else value for name, value in env.items()}
        changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
        if changed:
            self.encrypted_env = crypto.encrypt_json(new, field="env") if new else ""
        return changed

    @property
    def endpoint(self) -> str:
        """Where the server is, for people: the URL or the command line."""
        if self.transport == MCPTransport.STDIO:
            return " ".join([self.command, *[str(a) for a in self.args or []]]).strip()
        return self.url

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.transport in HTTP_TRANSPORTS:
            if not self.url:
                errors["url"] = f"The {self.transport} transport needs a URL."
            else:
                try:
                    parts = urlsplit(self.url)
                    host = parts.hostname
                except ValueError:
                    parts, host = None, None
                if parts is None or parts.scheme not in ("http", "https") or not host:
                    errors["url"] = "Give an absolute http:// or https:// URL."
                elif parts.username or parts.password:
                    errors["url"] = "Do not put credentials in the URL; use the auth token."
        elif self.transport == MCPTransport.STDIO and not self.command:
            errors["command"] = "The stdio transport needs a command."
        for field in ("args", "tools_allowed", "tools_denied"):
            problem = _string_list_errors(getattr(self, field))
            if problem:
                errors[field] = problem
        if self.token_env_var and self.encrypted_auth_token:
            both = (
                "Use either a stored auth token or token_env_var, not both (clear the token first)."
            )
            errors["token_env_var"] = both
        if errors:
            raise ValidationError(errors)
