"""Streaming the filtered changelist as CSV or JSON Lines."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse

from registry.admin.mixins.changelists import GuardedChangeListMixin, lookup_problem
from registry.exports import FORMATS, Column, export_response


class ExportAdminMixin(GuardedChangeListMixin):
    """'Export CSV' / 'Export JSON Lines' of the filtered changelist, and of selected rows.

    The export link carries the changelist's query string; the export view
    rebuilds the same ChangeList from it, so the file holds exactly the rows
    the filters, search and ordering select, streamed in constant memory.
    """

    export_columns: list[Column] = []
    export_basename = "export"
    export_chunk_size = 1000
    change_list_template = "admin/toolhub/export_change_list.html"
    actions = ["export_selected_csv", "export_selected_jsonl"]

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        export = path(
            "export/<str:fmt>/",
            self.admin_site.admin_view(self.export_view),
            name="{}_{}_export".format(*info),
        )
        return [export, *super().get_urls()]

    def export_queryset(self, request, queryset, fmt: str):
        return export_response(
            queryset,
            columns=self.export_columns,
            fmt=fmt,
            basename=self.export_basename,
            chunk_size=self.export_chunk_size,
        )

    def export_view(self, request, fmt: str):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if fmt not in FORMATS:
            raise Http404(f"Unknown export format '{fmt}'.")
        try:
            changelist = self.get_changelist_instance(request, report_refusal=False)
        except IncorrectLookupParameters as exc:
            self.message_user(request, f"Cannot export: {lookup_problem(exc)}", messages.ERROR)
            info = self.opts.app_label, self.opts.model_name
            return HttpResponseRedirect(reverse("admin:{}_{}_changelist".format(*info)))
        return self.export_queryset(request, changelist.get_queryset(request), fmt)

    @admin.action(description="Export selected as CSV", permissions=["view"])
    def export_selected_csv(self, request, queryset):
        return self.export_queryset(request, queryset, "csv")

    @admin.action(description="Export selected as JSON Lines", permissions=["view"])
    def export_selected_jsonl(self, request, queryset):
        return self.export_queryset(request, queryset, "jsonl")
