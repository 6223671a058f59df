"""Input and output serializers of the registry API (field names follow the seed contract)."""

from __future__ import annotations

import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from registry import schema as schema_mod
from registry.models import Tool, ToolConfig, ToolParameter
from registry.models.tools import (
    TOOL_FIELDS,
    JSONType,
    ParameterKind,
    ToolType,
    config_key_validator,
    parameter_name_validator,
    tool_name_validator,
)
from toolhub.api.params import MAX_DB_INT
from toolhub.api.serializers import (
    AnyCaseChoiceField,
    AnyJSONField,
    JSONObjectField,
    StrictSerializer,
)

DEFAULT_VALUE_HELP = (
    "The default written as text, as the original Tools Module writes it: read per the "
    'parameter\'s type (a string as it is; "5", "2.5", "true", or JSON for an array or '
    "object). An alternative to `default`; both may be given when they agree. `null`: no default."
)

# Output


class ToolParameterOutputSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(read_only=True)
    default = serializers.SerializerMethodField()
    default_value = serializers.SerializerMethodField(
        help_text="`default` written as text, as the original Tools Module answers it "
        "(null without a default)."
    )

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
            "default_value",
            "has_default",
            "json_schema",
            "position",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(OpenApiTypes.ANY)
    def get_default(self, obj):
        return obj.default if obj.has_default else None

    def get_default_value(self, obj) -> str | None:
        return schema_mod.default_as_text(obj.type, obj.default) if obj.has_default else None


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
    quarantined = serializers.SerializerMethodField(
        help_text="Calls are refused (tool_definition_changed) until a platform admin approves "
        "its changed definition: GET /tools/{id}/definition shows the diff."
    )

    class Meta:
        model = Tool
        fields = ["id", *TOOL_FIELDS, "category", "quarantined", "created_at", "updated_at"]

    def get_quarantined(self, obj) -> bool:
        return obj.quarantined_at is not None


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
    name = serializers.CharField(max_length=64, validators=[parameter_name_validator])
    parameter_type = AnyCaseChoiceField(choices=ParameterKind.choices, default=ParameterKind.INPUT)
    type = AnyCaseChoiceField(choices=JSONType.choices, default=JSONType.STRING)
    required = serializers.BooleanField(default=False)
    description = serializers.CharField(allow_blank=True, default="")
    default = AnyJSONField(required=False)
    default_value = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        write_only=True,
        help_text=DEFAULT_VALUE_HELP,
    )
    json_schema = JSONObjectField(required=False, default=dict)
    position = serializers.IntegerField(
        min_value=0, max_value=MAX_DB_INT, required=False
    )  # absent: after the others

    def validate(self, attrs):
        """``default_value`` (text) becomes ``default``, read per the parameter's type. The
        type and schema are the request's, else (a partial update) the parameter's
        (``context["parameter"]``)."""
        attrs = super().validate(attrs)
        if "default_value" not in attrs:
            return attrs
        text = attrs.pop("default_value")
        if text is None:  # no default, unless `default` gives one
            if "default" not in attrs and "has_default" in self.fields:
                attrs["has_default"] = False
            return attrs
        current = self.context.get("parameter")
        kind = attrs.get("type", current.type if current else JSONType.STRING)
        fragment = attrs.get("json_schema", current.json_schema if current else {})
        try:
            value = schema_mod.default_from_text(kind, text)
        except ValueError as exc:
            raise serializers.ValidationError({"default_value": [str(exc)]}) from None
        if "default" in attrs and _json(attrs["default"]) != _json(value):
            raise serializers.ValidationError(
                {"default_value": ["Disagrees with `default`: give one of them, or both alike."]}
            )
        if not schema_mod.fragment_errors(fragment or {}):
            problems = schema_mod.default_errors(kind, fragment or {}, value)
            if problems:
                raise serializers.ValidationError({"default_value": problems})
        attrs["default"] = value
        return attrs


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class ParameterUpdateSerializer(ParameterInputSerializer):
    has_default = serializers.BooleanField(required=False)


class ConfigInputSerializer(StrictSerializer):
    config_key = serializers.CharField(max_length=100, validators=[config_key_validator])
    config_value = AnyJSONField()
    is_secret = serializers.BooleanField(required=False, allow_null=True, default=None)


class ToolInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=64, validators=[tool_name_validator])
    description = serializers.CharField(allow_blank=True, required=False, default="")
    type = AnyCaseChoiceField(choices=ToolType.choices)
    version = serializers.CharField(max_length=32, required=False)
    tool_metadata = JSONObjectField(required=False)
    is_active = serializers.BooleanField(required=False)
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=3600, required=False)
    max_retries = serializers.IntegerField(min_value=0, max_value=10, required=False)
    cache_ttl_seconds = serializers.IntegerField(min_value=0, max_value=MAX_DB_INT, required=False)
    max_concurrency = serializers.IntegerField(
        min_value=1, max_value=MAX_DB_INT, required=False, allow_null=True
    )
    max_response_bytes = serializers.IntegerField(
        min_value=1024, max_value=MAX_DB_INT, required=False
    )
    requires_approval = serializers.BooleanField(required=False)
    approval_condition = JSONObjectField(
        required=False, help_text="A JSON-Schema fragment; {} for no condition."
    )
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
