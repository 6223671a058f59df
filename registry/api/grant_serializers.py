"""Serializers for grants on tools, one role or many, and the permission check."""

from __future__ import annotations

from rest_framework import serializers

from registry.models import Action, ToolGrant
from toolhub.api.serializers import StrictSerializer


class GrantOutputSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(allow_null=True)
    tool_name = serializers.SerializerMethodField()
    role_id = serializers.IntegerField()
    role_name = serializers.CharField(source="role.name")
    granted_by = serializers.SerializerMethodField()

    class Meta:
        model = ToolGrant
        fields = [
            "id",
            "tool_id",
            "tool_name",
            "role_id",
            "role_name",
            "action",
            "granted_by",
            "created_at",
        ]

    def get_tool_name(self, obj) -> str | None:
        return obj.tool.name if obj.tool_id else None

    def get_granted_by(self, obj) -> str | None:
        return obj.granted_by.username if obj.granted_by_id else None


# An explicit null is refused rather than read as "all tools": a client whose tool
# lookup failed must not grant on every tool by accident.
ALL_TOOLS_BY_OMISSION = {
    "null": "May not be null: omit tool_id to mean all tools, or give a tool's id."
}


class GrantInputSerializer(StrictSerializer):
    tool_id = serializers.UUIDField(
        required=False, help_text="Omit for all tools.", error_messages=ALL_TOOLS_BY_OMISSION
    )
    role_id = serializers.IntegerField()
    action = serializers.ChoiceField(choices=Action.choices)


class BulkGrantInputSerializer(StrictSerializer):
    tool_id = serializers.UUIDField(
        required=False, help_text="Omit for all tools.", error_messages=ALL_TOOLS_BY_OMISSION
    )
    role_ids = serializers.ListField(child=serializers.IntegerField(), min_length=1)
    action = serializers.ChoiceField(choices=Action.choices)


class PermissionCheckOutputSerializer(serializers.Serializer):
    allowed = serializers.BooleanField()
    has_permission = serializers.BooleanField(help_text="The seed's name for `allowed`.")
    granted_action = serializers.ChoiceField(choices=Action.choices, allow_null=True)
    required_action = serializers.ChoiceField(choices=Action.choices)
    tool_id = serializers.UUIDField()
    role_id = serializers.IntegerField()
