"""Toolsets in the admin: platform admins write (through ``registry.services.toolsets``,
audited), reviewers read."""

from __future__ import annotations

from django.contrib import admin

from registry.admin.mixins import (
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
)
from registry.models import Toolset
from registry.services import toolsets as services


@admin.register(Toolset)
class ToolsetAdmin(
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
    admin.ModelAdmin,
):
    list_display = ["name", "slug", "endpoint", "is_active", "tool_count"]
    list_filter = ["is_active"]
    search_fields = ["name", "slug"]
    autocomplete_fields = ["tools"]
    fields = ["name", "slug", "description", "is_active", "tools"]
    prepopulated_fields = {"slug": ["name"]}

    @admin.display(description="MCP endpoint")
    def endpoint(self, obj):
        return f"/mcp/{obj.slug}"

    @admin.display(description="Tools")
    def tool_count(self, obj):
        return obj.tools.count()

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data[f] for f in services.FIELDS if f in form.cleaned_data}
        tools = form.cleaned_data.get("tools", [])
        if change:
            toolset = services.toolset_update(
                actor=request.user, toolset=Toolset.objects.get(pk=obj.pk), data=data, tools=tools
            )
        else:
            toolset = services.toolset_create(actor=request.user, tools=tools, **data)
        obj.pk = toolset.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        """The tools were set by the service, audited with the rest."""

    def delete_model(self, request, obj):
        services.toolset_delete(actor=request.user, toolset=obj)

    def delete_queryset(self, request, queryset):
        for toolset in queryset:
            services.toolset_delete(actor=request.user, toolset=toolset)
