"""Who acts: roles (Django groups with a description) and agents, the service principals
that call tools with a token, each owned by a person."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import RegexValidator
from django.db import models


class RoleProfile(models.Model):
    """The description of a role. A role is a Django ``Group``; agents act with the roles they are in."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="profile")
    description = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.group.name


class Role(Group):
    """Admin-facing name for a group used as a role."""

    class Meta:
        proxy = True
        verbose_name = "role"


agent_name_validator = RegexValidator(
    r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}$",
    "Use letters, digits, '_', '.' or '-' (starting with a letter or digit).",
)


class Agent(models.Model):
    """A service principal: a program that calls tools with a token, owned by a person.

    Each agent has its own Django user (``user``), which holds its role
    memberships and tokens; the agent is never staff and cannot log into the
    admin. Deactivating the agent refuses all its tokens at once.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True, validators=[agent_name_validator])
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="agent"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_agents"
    )
    description = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    webhook_url = models.URLField(
        blank=True,
        help_text="Called (POST, signed with HMAC-SHA256) when a call that waited for approval ends.",
    )
    webhook_secret = models.TextField(
        blank=True, default="", help_text="Encrypted signing secret for the webhook."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
