"""What a role may do on tools: the actions, the grant rows that record who granted
what, and guardian's direct-foreign-key permission tables that mirror them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
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


class ToolGrant(models.Model):
    """A role's right on one tool, or on every tool when ``tool`` is empty.

    This row is the record of the grant (who granted it, when); the same
    right is mirrored into guardian's permission tables (object permission for
    one tool, model permission for all tools), which ``registry.authorization``
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
