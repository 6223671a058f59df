"""Input and output serializers of the registry API (field names follow the seed contract)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from registry.models import Tool, ToolConfig, ToolParameter
from registry.models.tools import JSONType, ParameterKind, ToolType
from toolhub.api.serializers import AnyJSONField, JSONObjectField, StrictSerializer

# Output


class ToolParameterOutputSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(read_only=True)
    default = serializers.SerializerMethodField()

    class Meta:
        model = ToolParameter
        fields = [
            "id",
            "tool_id",
            "name",
            "parameter_type",
            "type",
            "required",
            "description",
            "default",
            "has_default",
            "json_schema",
            "position",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(OpenApiTypes.ANY)
    def get_default(self, obj):
        return obj.default if obj.has_default else None


class ToolConfigOutputSerializer(serializers.ModelSerializer):
    """Secret values are never read back: they show as a mask."""

    tool_id = serializers.UUIDField(read_only=True)
    config_value = serializers.SerializerMethodField()

    class Meta:
        model = ToolConfig
        fields = [
            "id",
            "tool_id",
            "config_key",
            "config_value",
            "is_secret",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(OpenApiTypes.ANY)
    def get_config_value(self, obj):
        return obj.display_value


class ToolOutputSerializer(serializers.ModelSerializer):
    category = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = Tool
        fields = [
            "id",
            "name",
            "description",
            "type",
            "version",
            "tool_metadata",
            "category",
            "is_active",
            "timeout_seconds",
            "max_retries",
            "cache_ttl_seconds",
            "max_concurrency",
            "max_response_bytes",
            "requires_approval",
            "approval_condition",
            "approval_ttl_seconds",
            "created_at",
            "updated_at",
        ]


class ToolDetailOutputSerializer(ToolOutputSerializer):
    parameters = ToolParameterOutputSerializer(many=True, read_only=True)
    configs = ToolConfigOutputSerializer(many=True, read_only=True)
    input_schema = serializers.SerializerMethodField()

    class Meta(ToolOutputSerializer.Meta):
        fields = [*ToolOutputSerializer.Meta.fields, "parameters", "configs", "input_schema"]

    def get_input_schema(self, obj) -> dict:
        return obj.input_schema()


# Input


class ParameterInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64)
    parameter_type = serializers.ChoiceField(
        choices=ParameterKind.choices, default=ParameterKind.INPUT
    )
    type = serializers.ChoiceField(choices=JSONType.choices, default=JSONType.STRING)
    required = serializers.BooleanField(default=False)
    description = serializers.CharField(allow_blank=True, default="")
    default = AnyJSONField(required=False)
    json_schema = serializers.JSONField(required=False, default=dict)
    position = serializers.IntegerField(min_value=0, required=False)  # absent: after the others


class ParameterUpdateSerializer(ParameterInputSerializer):
    has_default = serializers.BooleanField(required=False)


class ConfigInputSerializer(StrictSerializer):
    config_key = serializers.CharField(max_length=100)
    config_value = AnyJSONField()
    is_secret = serializers.BooleanField(required=False, allow_null=True, default=None)


class ToolInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64)
    description = serializers.CharField(allow_blank=True, required=False, default="")
    type = serializers.ChoiceField(choices=ToolType.choices)
    version = serializers.CharField(max_length=32, required=False)
    tool_metadata = JSONObjectField(required=False)
    is_active = serializers.BooleanField(required=False)
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_retries = serializers.IntegerField(min_value=0, max_value=10, required=False)
    cache_ttl_seconds = serializers.IntegerField(min_value=0, required=False)
    max_concurrency = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    max_response_bytes = serializers.IntegerField(min_value=1024, required=False)
    requires_approval = serializers.BooleanField(required=False)
    approval_condition = serializers.JSONField(required=False)
    approval_ttl_seconds = serializers.IntegerField(
        min_value=60, max_value=30 * 24 * 3600, required=False
    )
    parameters = ParameterInputSerializer(many=True, required=False)
    configs = ConfigInputSerializer(many=True, required=False)

    def validate_tool_metadata(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


class ToolUpdateSerializer(ToolInputSerializer):
    """PUT replaces the tool's own fields; parameters and configs have their own endpoints."""

    parameters = None
    configs = None
