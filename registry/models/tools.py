"""The tool catalog: tools, their parameters and their configuration."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from registry import crypto, schema

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"

# The fields of a tool its managers set, declared once: what the tool services accept and
# the audit snapshot records, what the API shows, the admin edits (identity, then the
# execution controls) and the catalog imports and exports.
TOOL_IDENTITY_FIELDS = ("name", "description", "type", "version", "tool_metadata", "is_active")
TOOL_CONTROL_FIELDS = (
    "timeout_seconds",
    "max_retries",
    "cache_ttl_seconds",
    "max_concurrency",
    "max_response_bytes",
    "requires_approval",
    "approval_condition",
    "approval_ttl_seconds",
)
TOOL_FIELDS = TOOL_IDENTITY_FIELDS + TOOL_CONTROL_FIELDS
tool_name_validator = RegexValidator(
    TOOL_NAME_PATTERN,
    "Use 1 to 64 characters: letters, digits, '_' or '-'.",
    code="invalid_name",
)
parameter_name_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$",
    "Start with a letter or '_'; then letters, digits, '_', '.' or '-'.",
)
config_key_validator = RegexValidator(
    r"^[A-Za-z0-9_.-]{1,100}$",
    "Use 1 to 100 characters: letters, digits, '_', '.' or '-'.",
    code="invalid_key",
)


class ToolType(models.TextChoices):
    HTTP = "http", "HTTP API"
    DATABASE = "database", "Database query"
    MCP = "mcp", "MCP server tool"
    PYTHON = "python", "Python function"
    COMMAND = "command", "Command (sandboxed program)"


class DefinitionSource(models.TextChoices):
    REGISTRY = "registry", "The registry (written by a person)"
    MCP_SERVER = "mcp_server", "The tool's MCP server"


class QuarantineReason(models.TextChoices):
    CHANGED = "changed", "Its definition changed"
    NEW_TOOL = "new_tool", "It appeared on its server after the first sync"
    REJECTED = "rejected", "Its server serves a rejected definition"


class Tool(models.Model):
    """A callable capability registered for agents: an HTTP API, a query, an MCP tool, a
    function or a sandboxed command.

    Soft delete is deactivation (``is_active=False``); a tool that anything
    references (executions, grants) cannot be hard-deleted.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=64, unique=True, validators=[tool_name_validator])
    description = models.TextField(blank=True)
    type = models.CharField(max_length=16, choices=ToolType.choices)
    version = models.CharField(max_length=32, default="1.0.0")
    tool_metadata = models.JSONField(
        default=dict,
        blank=True,
        help_text="Free JSON; known keys: category, speed, safety, risk, cost_per_call.",
    )
    is_active = models.BooleanField(default=True, db_index=True)
    timeout_seconds = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(3600)]
    )
    max_retries = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(10)])
    cache_ttl_seconds = models.PositiveIntegerField(
        default=0, help_text="0 disables result caching."
    )
    max_concurrency = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Most runs at once across all workers; empty means no limit, 1 means never in parallel.",
    )
    max_response_bytes = models.PositiveIntegerField(
        default=1024 * 1024, validators=[MinValueValidator(1024)]
    )
    requires_approval = models.BooleanField(default=False)
    approval_condition = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "JSON Schema tested against the call's arguments: approval is needed only when they "
            'match (e.g. {"properties": {"amount": {"minimum": 1000}}, "required": ["amount"]}). '
            "Empty: every call needs approval."
        ),
    )
    approval_ttl_seconds = models.PositiveIntegerField(
        default=24 * 3600,
        validators=[MinValueValidator(60), MaxValueValidator(30 * 24 * 3600)],
        help_text="A pending call expires after this long without a decision.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # When what a call of the tool does last changed: its type, run settings,
    # approval rule, MCP link, parameters or configs (not its name, description
    # or other metadata). Pending approvals and cached results follow this.
    definition_changed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The definition the model reads (name, description, input and output schema,
    # annotations) as approved, and its hash (``registry.definitions``). For a tool
    # synced from an MCP server it is the server's definition of the remote tool;
    # for any other tool, the registry's own (a person's edit through the services
    # re-approves it). A sync or a call that sees another definition keeps it as
    # ``pending_definition`` and quarantines the tool until a platform admin decides.
    approved_definition = models.JSONField(default=dict, blank=True, editable=False)
    approved_definition_hash = models.CharField(max_length=64, blank=True, editable=False)
    approved_definition_source = models.CharField(
        max_length=16, choices=DefinitionSource.choices, blank=True, editable=False
    )
    pending_definition = models.JSONField(null=True, blank=True, editable=False)
    pending_definition_hash = models.CharField(max_length=64, blank=True, editable=False)
    pending_definition_seen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
        help_text="Who ran the sync that found the pending definition (empty: beat or a call).",
    )
    rejected_definition_hash = models.CharField(max_length=64, blank=True, editable=False)
    # Set while calls are refused with ``tool_definition_changed``.
    quarantined_at = models.DateTimeField(null=True, blank=True, editable=False)
    quarantine_reason = models.CharField(
        max_length=16, choices=QuarantineReason.choices, blank=True, editable=False
    )

    class Meta:
        ordering = ["name"]
        permissions = [
            ("execute_tool", "Can execute tool"),
            ("manage_tool", "Can manage tool"),
            ("grant_tool", "Can grant roles access to tools"),
            ("approve_tool", "Can approve calls of tool"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_high_risk(self) -> bool:
        """High-risk tools fail closed when a control (e.g. the rate-limit cache) is unavailable.

        A command tool is high-risk unless its metadata names a risk: it runs a program.
        """
        metadata = self.tool_metadata or {}
        if self.type == ToolType.COMMAND and "risk" not in metadata:
            return True
        return (
            metadata.get("risk") in ("high", "critical") or metadata.get("safety") == "destructive"
        )

    @property
    def category(self) -> str | None:
        return (self.tool_metadata or {}).get("category")

    def input_schema(self) -> dict:
        return schema.tool_input_schema(self)

    @property
    def is_quarantined(self) -> bool:
        return self.quarantined_at is not None


class ParameterKind(models.TextChoices):
    INPUT = schema.INPUT_KIND, "Input"
    OUTPUT = schema.OUTPUT_KIND, "Output"


class JSONType(models.TextChoices):
    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"
    NULL = "null"


class ToolParameter(models.Model):
    """One input or output of a tool. Input parameters are the source of the tool's JSON Schema.

    ``json_schema`` is an optional JSON-Schema fragment merged into the
    parameter's schema for nested shapes (``items``, ``properties``, ``enum``,
    bounds); ``default`` applies when ``has_default`` is set, so ``null`` can
    itself be a default.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="parameters")
    name = models.CharField(
        max_length=64,
        validators=[parameter_name_validator],
    )
    parameter_type = models.CharField(
        max_length=8, choices=ParameterKind.choices, default=ParameterKind.INPUT
    )
    type = models.CharField(max_length=8, choices=JSONType.choices, default=JSONType.STRING)
    required = models.BooleanField(default=False)
    description = models.TextField(blank=True)
    has_default = models.BooleanField(default=False)
    default = models.JSONField(null=True, blank=True)
    json_schema = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tool", "parameter_type", "position", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tool", "parameter_type", "name"], name="unique_parameter_name_per_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool.name}.{self.name} ({self.parameter_type})"


class ToolConfig(models.Model):
    """A key/value setting of one tool (base URL, headers, query, credentials).

    Secret values are stored only encrypted (``encrypted_value``); they are
    write-only through the API and admin and masked wherever they are shown.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="configs")
    config_key = models.CharField(max_length=100, validators=[config_key_validator])
    is_secret = models.BooleanField(default=False)
    plain_value = models.JSONField(null=True, blank=True)
    encrypted_value = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tool", "config_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["tool", "config_key"], name="unique_config_key_per_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool.name}:{self.config_key}"

    @property
    def value(self):
        """The real value; for secrets, decrypted. Only executors should read this."""
        if self.is_secret:
            return crypto.decrypt_json(self.encrypted_value) if self.encrypted_value else None
        return self.plain_value

    def set_value(self, value) -> None:
        if self.is_secret:
            self.encrypted_value = crypto.encrypt_json(value, field="config_value")
            self.plain_value = None
        else:
            self.plain_value = value
            self.encrypted_value = ""

    @property
    def display_value(self):
        """What a person may see: the value, or a mask for secrets."""
        return crypto.MASK if self.is_secret else self.plain_value
