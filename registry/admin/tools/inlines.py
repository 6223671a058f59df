"""The parts of a tool edited on its page: parameters, configs and rate limits."""

from __future__ import annotations

import json

from django.contrib import admin

from registry import access
from registry.admin.forms import ToolConfigForm, ToolParameterForm
from registry.models import Action, RateLimitRule, ToolConfig, ToolParameter


def manages(request, tool) -> bool:
    """May the user manage this one tool (a ``manage`` grant, as the API asks)?"""
    return tool is not None and access.can(request.user, Action.MANAGE, tool)


class ManagedToolPartsMixin:
    """Parts of a tool (parameters, configs, rate limits) that those who may manage the
    tool change on its page, as they may through the API; ``obj`` is the tool."""

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or (
            obj is not None and access.can(request.user, Action.READ, obj)
        )

    def get_queryset(self, request):
        # Django empties an inline's rows unless the user holds the model's own
        # view or change permission, asked without the tool; here that is decided per
        # tool (has_view_permission(request, obj)) before the inline is shown at all,
        # and the formset keeps only this tool's rows.
        return admin.options.BaseModelAdmin.get_queryset(self, request)

    def has_add_permission(self, request, obj=None):
        return super().has_add_permission(request, obj) or manages(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or manages(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) or manages(request, obj)


class ToolParameterInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolParameter
    form = ToolParameterForm
    extra = 0
    ordering = ["parameter_type", "position", "name"]


class ToolConfigInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolConfig
    form = ToolConfigForm
    extra = 0
    fields = ["config_key", "value", "is_secret", "shown_value"]
    readonly_fields = ["shown_value"]

    def get_fields(self, request, obj=None):
        # Read-only inlines render fields from the object, and ToolConfig.value is the
        # decrypted secret: people who cannot change configs see only the masked value.
        fields = list(super().get_fields(request, obj))
        if not self.has_change_permission(request, obj):
            fields = [f for f in fields if f != "value"]
        return fields

    @admin.display(description="Current value")
    def shown_value(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        value = obj.display_value
        return value if isinstance(value, str) else json.dumps(value)


class RateLimitRuleInline(ManagedToolPartsMixin, admin.TabularInline):
    model = RateLimitRule
    extra = 0
    fields = ["scope", "max_requests", "time_window_seconds", "is_active", "description"]
    verbose_name_plural = (
        "Rate limits (all must pass; rules for all tools are under Rate limit rules)"
    )
