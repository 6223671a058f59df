"""Rate-limit rules in the admin: the rules for all tools live here (a tool's own
rules are also inline on its page). Writes go through ``registry.services.limits``
so each is audited; platform admins write, reviewers read."""

from __future__ import annotations

from django.contrib import admin

from registry.admin.mixins import (
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
)
from registry.models import RateLimitRule
from registry.services import limits as services


@admin.register(RateLimitRule)
class RateLimitRuleAdmin(
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
    admin.ModelAdmin,
):
    list_display = [
        "applies_to",
        "scope",
        "max_requests",
        "time_window_seconds",
        "is_active",
        "description",
    ]
    list_filter = ["scope", "is_active", ("tool", admin.EmptyFieldListFilter)]
    search_fields = ["tool__name", "description"]
    list_select_related = ["tool"]
    autocomplete_fields = ["tool"]
    fields = ["tool", *services.FIELDS]
    ordering = ["tool__name", "scope"]

    @admin.display(description="Applies to", ordering="tool__name")
    def applies_to(self, obj):
        return obj.tool.name if obj.tool_id else "all tools"

    def get_readonly_fields(self, request, obj=None):
        return ["tool"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data[f] for f in services.FIELDS if f in form.cleaned_data}
        if change:
            rule = services.rate_limit_update(
                actor=request.user, rule=RateLimitRule.objects.get(pk=obj.pk), data=data
            )
        else:
            rule = services.rate_limit_create(
                actor=request.user, tool=form.cleaned_data.get("tool"), **data
            )
        obj.pk = rule.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.rate_limit_delete(actor=request.user, rule=obj)

    def delete_queryset(self, request, queryset):
        for rule in queryset:
            services.rate_limit_delete(actor=request.user, rule=rule)
