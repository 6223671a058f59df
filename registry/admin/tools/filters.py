"""The tool list's own filters: category (from the metadata) and quarantine."""

from __future__ import annotations

from django.contrib import admin

from registry.models import Tool


class CategoryFilter(admin.SimpleListFilter):
    title = "category"
    parameter_name = "category"

    def lookups(self, request, model_admin):
        categories = set()
        for metadata in Tool.objects.values_list("tool_metadata", flat=True).distinct()[:500]:
            if isinstance(metadata, dict) and metadata.get("category"):
                categories.add(str(metadata["category"]))
        # The category asked for is a choice even when no tool has it: the filter then
        # applies (no rows), where a filter without choices would be left out.
        if self.value():
            categories.add(self.value())
        return [(c, c) for c in sorted(categories)]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(tool_metadata__category=self.value())
        return queryset


class QuarantineFilter(admin.SimpleListFilter):
    title = "definition"
    parameter_name = "quarantined"

    def lookups(self, request, model_admin):
        return [("yes", "Quarantined (changed or new)"), ("no", "Approved")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(quarantined_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(quarantined_at__isnull=True)
        return queryset
