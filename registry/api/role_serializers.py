"""Serializers for roles: a role's description and the permissions it carries."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.validators import RegexValidator
from rest_framework import serializers

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
