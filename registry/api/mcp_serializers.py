"""Serializers of the MCP server API. The auth token is write-only: output shows ``has_auth_token``."""

from __future__ import annotations

from rest_framework import serializers

from registry.models import MCPServer
from registry.models.mcp import MCPTransport
from registry.models.mcp.server import (
    MCP_SERVER_FIELDS,
    mcp_server_name_validator,
    mcp_tool_prefix_validator,
)
from registry.services.mcp import mcp_server_tools
from toolhub.api.params import MAX_DB_INT
from toolhub.api.serializers import StrictSerializer


class StrictCharField(serializers.CharField):
    """A string, and only a string (DRF's CharField would turn 1 into "1")."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class MCPServerOutputSerializer(serializers.ModelSerializer):
    has_auth_token = serializers.BooleanField(read_only=True)
    env = serializers.SerializerMethodField(
        help_text="The stdio environment's names; values are write-only and shown masked."
    )
    tool_count = serializers.SerializerMethodField()

    class Meta:
        model = MCPServer
        fields = [
            "id",
            *MCP_SERVER_FIELDS,
            "env",
            "has_auth_token",
            "last_synced_at",
            "last_sync_error",
            "tool_count",
            "created_at",
            "updated_at",
        ]

    def get_env(self, obj) -> dict[str, str]:
        return obj.masked_env()

    def get_tool_count(self, obj) -> int:
        return mcp_server_tools(obj).count()


class MCPServerInputSerializer(StrictSerializer):
    """``auth_token``: a new token replaces the stored one; ``null`` or ``""`` clears it; absent keeps it.

    ``env`` replaces the whole environment; its values are stored encrypted and
    read back masked, and a masked value sent back keeps the stored one.
    """

    name = serializers.CharField(max_length=40, validators=[mcp_server_name_validator])
    description = serializers.CharField(allow_blank=True, required=False)
    transport = serializers.ChoiceField(choices=MCPTransport.choices)
    url = serializers.CharField(allow_blank=True, max_length=2000, required=False)
    command = serializers.CharField(allow_blank=True, max_length=500, required=False)
    args = serializers.ListField(child=StrictCharField(allow_blank=True), required=False)
    env = serializers.DictField(child=StrictCharField(allow_blank=True), required=False)
    auth_token = serializers.CharField(
        write_only=True, allow_null=True, allow_blank=True, required=False, trim_whitespace=True
    )
    token_env_var = serializers.CharField(allow_blank=True, max_length=128, required=False)
    tools_allowed = serializers.ListField(child=StrictCharField(), required=False)
    tools_denied = serializers.ListField(child=StrictCharField(), required=False)
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_concurrency = serializers.IntegerField(
        min_value=1, max_value=MAX_DB_INT, allow_null=True, required=False
    )
    is_enabled = serializers.BooleanField(required=False)
    sync_interval_minutes = serializers.IntegerField(
        min_value=0, max_value=7 * 24 * 60, required=False
    )
    tool_prefix = serializers.CharField(
        max_length=40,
        allow_null=True,
        allow_blank=True,
        required=False,
        trim_whitespace=False,
        validators=[mcp_tool_prefix_validator],
        help_text=(
            "What the server's tools' names start with: null (the default) for "
            "'<name>__', \"\" for the upstream's own names, or a prefix of your own."
        ),
    )
