"""Serializers for roles, agents, tokens, grants and discovery."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.validators import RegexValidator
from rest_framework import serializers

from registry.api.mcp_serializers import StrictCharField
from registry.models import Action, Agent, ApiToken, ToolGrant
from registry.models.access import agent_name_validator
from toolhub.api.serializers import StrictSerializer


class RoleOutputSerializer(serializers.ModelSerializer):
    description = serializers.SerializerMethodField()
    permissions = serializers.SerializerMethodField()

    class Meta:
        model = Group
        fields = ["id", "name", "description", "permissions"]

    def get_description(self, obj) -> str:
        profile = getattr(obj, "profile", None)
        return profile.description if profile else ""

    def get_permissions(self, obj) -> list[str]:
        return sorted(
            f"{p.content_type.app_label}.{p.codename}"
            for p in obj.permissions.all()
            if p.codename not in ("view_tool", "execute_tool", "manage_tool")
        )


# The form of a permission's label; which labels a role may hold the service decides.
permission_label_validator = RegexValidator(r"^[^.]+\.[^.]+$", "Not app_label.codename.")


class RoleInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=150)
    description = serializers.CharField(allow_blank=True, required=False, default="")
    permissions = serializers.ListField(
        child=serializers.CharField(validators=[permission_label_validator]), required=False
    )


class AgentOutputSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")
    owner_id = serializers.IntegerField()
    roles = serializers.SerializerMethodField()
    role_ids = serializers.SerializerMethodField()
    has_webhook_secret = serializers.SerializerMethodField()
    # A plain string: "" (no webhook) or a URL ("" would match both of a model URL
    # field's oneOf branches, which strict validators refuse).
    webhook_url = serializers.CharField(read_only=True)

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "owner",
            "owner_id",
            "description",
            "is_active",
            "roles",
            "role_ids",
            "webhook_url",
            "has_webhook_secret",
            "created_at",
            "updated_at",
        ]

    def get_has_webhook_secret(self, obj) -> bool:
        return bool(obj.webhook_secret)

    def _roles(self, obj):
        return sorted(obj.user.groups.all(), key=lambda g: g.name)

    def get_roles(self, obj) -> list[dict]:
        return [{"id": g.pk, "name": g.name} for g in self._roles(obj)]

    def get_role_ids(self, obj) -> list[int]:
        return [g.pk for g in self._roles(obj)]


def webhook_url_field() -> serializers.CharField:
    return StrictCharField(
        allow_blank=True,
        max_length=200,
        required=False,
        help_text="POSTed (signed) when a call of this agent that waited for approval ends.",
    )


def webhook_secret_field() -> serializers.CharField:
    return StrictCharField(
        write_only=True,
        allow_null=True,
        allow_blank=True,
        required=False,
        trim_whitespace=False,
        help_text=(
            "Signing secret of the webhook (at least 16 characters); stored encrypted, never "
            "shown. Null or empty removes it; absent keeps it."
        ),
    )


class AgentInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100, validators=[agent_name_validator])
    owner = serializers.CharField(
        help_text="Username (or numeric id) of the person who owns the agent."
    )
    description = serializers.CharField(allow_blank=True, required=False, default="")
    role_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    is_active = serializers.BooleanField(required=False, default=True)
    webhook_url = webhook_url_field()
    webhook_secret = webhook_secret_field()


class AgentUpdateSerializer(StrictSerializer):
    owner = serializers.CharField(required=False)
    description = serializers.CharField(allow_blank=True, required=False)
    role_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    is_active = serializers.BooleanField(required=False)
    webhook_url = webhook_url_field()
    webhook_secret = webhook_secret_field()


class TokenOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "status",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]


class TokenCreatedSerializer(TokenOutputSerializer):
    token = serializers.CharField(help_text="The token itself. Shown once: store it now.")

    class Meta(TokenOutputSerializer.Meta):
        fields = [*TokenOutputSerializer.Meta.fields, "token"]


class TokenInputSerializer(StrictSerializer):
    exclusive_fields = (("expires_at", "expires_in_days"),)  # what ``validate`` enforces
    name = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    expires_in_days = serializers.IntegerField(min_value=1, max_value=3650, required=False)

    def validate(self, attrs):
        if attrs.get("expires_at") and attrs.get("expires_in_days"):
            raise serializers.ValidationError(
                {"expires_in_days": ["Give expires_at or expires_in_days, not both."]}
            )
        return attrs


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
