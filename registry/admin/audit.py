"""The audit log in the admin: searchable, filterable, and read-only for everyone."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from registry.admin.mixins import NoCountAdminMixin, ReadOnlyAdminMixin
from registry.models import AuditEvent


def pretty_json(value) -> str:
    if value is None:
        return "—"
    return format_html(
        '<pre style="white-space:pre-wrap;max-width:60em">{}</pre>',
        json.dumps(value, indent=2, sort_keys=True),
    )


class ActionPrefixFilter(admin.SimpleListFilter):
    title = "object kind"
    parameter_name = "target_type"

    def lookups(self, request, model_admin):
        return [
            ("registry.tool", "Tool"),
            ("registry.toolparameter", "Tool parameter"),
            ("registry.toolconfig", "Tool config"),
        ]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(target_type=self.value())
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(NoCountAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "occurred_at",
        "actor_name",
        "action",
        "target_type",
        "target_repr",
        "request_id",
    ]
    list_filter = ["action", ActionPrefixFilter, "occurred_at"]
    search_fields = ["=request_id", "=target_id", "=actor_name"]
    date_hierarchy = "occurred_at"
    list_per_page = 50
    ordering = ["-id"]
    fields = [
        "id",
        "occurred_at",
        "actor_name",
        "actor",
        "action",
        "target_type",
        "target_id",
        "target_repr",
        "request_id",
        "client_address",
        "before_pretty",
        "after_pretty",
    ]
    readonly_fields = fields

    @admin.display(description="Before")
    def before_pretty(self, obj):
        return pretty_json(obj.before)

    @admin.display(description="After")
    def after_pretty(self, obj):
        return pretty_json(obj.after)

    def get_actions(self, request):
        return {}  # no bulk delete, not even for superusers
