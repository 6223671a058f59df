"""The parts of a tool edited on its page: parameters, configs and rate limits."""

from __future__ import annotations

import json

from django.contrib import admin

from registry import authorization
from registry.admin.forms import ToolConfigForm, ToolParameterForm
from registry.models import Action, RateLimitRule, ToolConfig, ToolParameter
from registry.policy import policy_allows


def allows(request, action: str, tool) -> bool:
    """May the user make the write ``action`` on this one tool (``registry.policy``)?"""
    return tool is not None and policy_allows(actor=request.user, action=action, tool=tool)


class ManagedToolPartsMixin:
    """Parts of a tool (parameters, configs, rate limits) changed on its page by those
    ``registry.policy`` lets make ``policy_action`` on the tool, as through the API;
    ``obj`` is the tool. The services check each row written (what runs, risk, ...)."""

    policy_action = ""

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or (
            obj is not None and authorization.can(request.user, Action.READ, obj)
        )

    def get_queryset(self, request):
        # Django empties an inline's rows unless the user holds the model's own
        # view or change permission, asked without the tool; here that is decided per
        # tool (has_view_permission(request, obj)) before the inline is shown at all,
        # and the formset keeps only this tool's rows.
        return admin.options.BaseModelAdmin.get_queryset(self, request)

    def _writes(self, request, obj, model_permission) -> bool:
        if obj is None:
            return model_permission
        return allows(request, self.policy_action, obj)

    def has_add_permission(self, request, obj=None):
        return self._writes(request, obj, super().has_add_permission(request, obj))

    def has_change_permission(self, request, obj=None):
        return self._writes(request, obj, super().has_change_permission(request, obj))

    def has_delete_permission(self, request, obj=None):
        return self._writes(request, obj, super().has_delete_permission(request, obj))


class ToolParameterInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolParameter
    policy_action = "parameter.write"
    form = ToolParameterForm
    extra = 0
    ordering = ["parameter_type", "position", "name"]


class ToolConfigInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolConfig
    policy_action = "config.write"
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
    policy_action = "rate_limit.write"
    extra = 0
    fields = ["scope", "max_requests", "time_window_seconds", "is_active", "description"]
    verbose_name_plural = (
        "Rate limits (all must pass; rules for all tools are under Rate limit rules)"
    )
