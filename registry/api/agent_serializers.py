"""Serializers for agents (their owner, roles and webhook) and their API tokens."""

from __future__ import annotations

from rest_framework import serializers

from registry.api.mcp_serializers import StrictCharField
from registry.models import Agent, ApiToken
from registry.models.principals import agent_name_validator
from toolhub.api.serializers import StrictSerializer


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
