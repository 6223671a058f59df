"""Who may do what: agents (service principals), roles, and grants on tools."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import RegexValidator
from django.db import models
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from registry.models.tools import Tool


class Action(models.TextChoices):
    """What a grant allows on a tool. ``manage`` implies ``execute`` implies ``read``.

    ``approve`` (decide on calls that need human approval) stands apart: it
    implies ``read`` and nothing else, and no other right implies it.
    """

    READ = "read", "Read"
    EXECUTE = "execute", "Execute"
    MANAGE = "manage", "Manage"
    APPROVE = "approve", "Approve calls"


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


class ToolGrant(models.Model):
    """A role's right on one tool, or on every tool when ``tool`` is empty.

    This row is the record of the grant (who granted it, when); the same
    right is mirrored into guardian's permission tables (object permission for
    one tool, model permission for all tools), which ``registry.access``
    reads. Services keep both in one transaction.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool = models.ForeignKey(
        Tool, null=True, blank=True, on_delete=models.CASCADE, related_name="grants"
    )
    role = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="tool_grants")
    action = models.CharField(max_length=16, choices=Action.choices)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tool", "role", "action"],
                name="unique_grant_per_tool",
                condition=models.Q(tool__isnull=False),
            ),
            models.UniqueConstraint(
                fields=["role", "action"],
                name="unique_grant_all_tools",
                condition=models.Q(tool__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.role.name} may {self.action} {self.tool.name if self.tool_id else 'all tools'}"
        )


class ToolUserObjectPermission(UserObjectPermissionBase):
    """Guardian's direct-foreign-key table for per-user rights on a tool (fast joins)."""

    content_object = models.ForeignKey(Tool, on_delete=models.CASCADE)


class ToolGroupObjectPermission(GroupObjectPermissionBase):
    """Guardian's direct-foreign-key table for per-role rights on a tool (fast joins)."""

    content_object = models.ForeignKey(Tool, on_delete=models.CASCADE)
