"""Rate-limit rules: at most N calls per W seconds, per tool (or all tools) and scope."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from registry.models.tools import Tool


class RateLimitScope(models.TextChoices):
    """Whose calls share one counter."""

    GLOBAL = "global", "Everyone together"
    ROLE = "role", "Per role"
    AGENT = "agent", "Per agent"
    USER = "user", "Per user (principal)"


class RateLimitRule(models.Model):
    """A limit checked and counted at admission. Several rules may apply to one call; all must pass.

    ``tool`` empty means the rule applies to every tool (each tool counted
    separately). With scope ``role`` each of the caller's roles has its own
    counter and every one must have room.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tool = models.ForeignKey(
        Tool, null=True, blank=True, on_delete=models.CASCADE, related_name="rate_limits"
    )
    scope = models.CharField(
        max_length=8, choices=RateLimitScope.choices, default=RateLimitScope.AGENT
    )
    max_requests = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    time_window_seconds = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(31 * 24 * 3600)]
    )
    is_active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tool__name", "scope", "time_window_seconds"]
        indexes = [models.Index(fields=["tool", "is_active"], name="ratelimit_tool_idx")]

    def __str__(self) -> str:
        target = self.tool.name if self.tool_id else "all tools"
        return f"{self.max_requests}/{self.time_window_seconds}s per {self.scope} on {target}"
