"""Guards in the admin: one list for the all-tools guards and each tool's own. Writes go
through ``registry.services.guards`` so each is audited; platform admins write,
reviewers read."""

from __future__ import annotations

from django.contrib import admin

from registry.admin.mixins import (
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
)
from registry.models import Guard
from registry.services import guards as services


@admin.register(Guard)
class GuardAdmin(
    GuardedChangeListMixin,
    KeyCheckedAutocompleteMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
    admin.ModelAdmin,
):
    list_display = ["name", "applies_to", "kind", "stage", "action", "order", "is_active"]
    list_filter = ["kind", "stage", "action", "is_active", ("tool", admin.EmptyFieldListFilter)]
    search_fields = ["name", "tool__name", "description"]
    list_select_related = ["tool"]
    autocomplete_fields = ["tool"]
    fields = ["tool", *services.FIELDS]
    ordering = ["order", "name"]

    @admin.display(description="Applies to", ordering="tool__name")
    def applies_to(self, obj):
        return obj.tool.name if obj.tool_id else "all tools"

    def get_readonly_fields(self, request, obj=None):
        return ["tool"] if obj is not None else []

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if "stage" in form.base_fields:  # the kind's own stage when left empty
            form.base_fields["stage"].required = False
        return form

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data[f] for f in services.FIELDS if f in form.cleaned_data}
        if change:
            guard = services.guard_update(
                actor=request.user, guard=Guard.objects.get(pk=obj.pk), data=data
            )
        else:
            guard = services.guard_create(
                actor=request.user, tool=form.cleaned_data.get("tool"), **data
            )
        obj.pk = guard.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.guard_delete(actor=request.user, guard=obj)

    def delete_queryset(self, request, queryset):
        for guard in queryset:
            services.guard_delete(actor=request.user, guard=guard)
