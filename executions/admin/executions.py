"""Execution records in the admin: read-only, filterable at scale, exportable."""

from __future__ import annotations

import re
import uuid

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from executions import selectors
from executions.admin.inputs import arguments_html
from executions.exports import CHUNK_SIZE as EXPORT_CHUNK_SIZE
from executions.exports import EXECUTION_COLUMNS
from executions.models import Approval, Execution
from executions.services.pipeline import execution_cancel
from registry import authorization
from registry.admin.audit import admin_time, audit_changelist_url, pretty_json
from registry.admin.integrity import findings_context, integrity_filter
from registry.admin.mixins import (
    ExportAdminMixin,
    InputFilter,
    NoCountAdminMixin,
    ReadOnlyAdminMixin,
    time_range_filter,
)
from registry.models import Agent, AuditEvent, Tool
from toolhub.api.params import parse_id
from toolhub.exceptions import ToolHubError

EXECUTION_TARGET = "executions.execution"  # audit events of an execution have this target_type
AUDIT_ROWS_SHOWN = 50
TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


class NameOrIdFilter(InputFilter):
    """Filter on a foreign key by the related row's id or its name, resolved to ids first
    so the (fk, -created_at) index answers."""

    field: str  # the foreign key on Execution
    name_field = "name"

    def related_queryset(self):
        raise NotImplementedError

    def parse_id(self, value: str):
        return _uuid(value)

    def filter(self, queryset, value):
        pk = self.parse_id(value)
        if pk is not None:
            return queryset.filter(**{f"{self.field}_id": pk})
        ids = (
            self.related_queryset().filter(**{self.name_field: value}).values_list("pk", flat=True)
        )
        return queryset.filter(**{f"{self.field}_id__in": list(ids)})


class ToolFilter(NameOrIdFilter):
    title = "tool"
    parameter_name = "tool"
    placeholder = "tool name or id"
    field = "tool"

    def related_queryset(self):
        return Tool.objects.all()


class AgentFilter(NameOrIdFilter):
    title = "agent"
    parameter_name = "agent"
    placeholder = "agent name or id"
    field = "agent"

    def related_queryset(self):
        return Agent.objects.all()


class RoleFilter(InputFilter):
    """Calls narrowed to a role (``role``, shown as "Role used"), by its name or id: the
    API's ``role`` filter, on the same index. Calls made with all the caller's roles
    record them in "Roles used" and are found by principal."""

    title = "role used (narrowed to)"
    parameter_name = "role"
    placeholder = "role name or id"

    def filter(self, queryset, value):
        role_id = parse_id(value)  # not an id (huge, or other scripts' digits): a role name
        if role_id is not None:
            return queryset.filter(role_id=role_id)
        return queryset.filter(role__name=value)


class PrincipalFilter(InputFilter):
    """Calls by a principal, by the name the list shows (``principal_name``): an agent's
    name, or a person's user name, as recorded with the call.

    The name is first resolved to the principals it names now (people by user name,
    agents by name), so the (principal, -created_at) index answers; calls whose
    principal has been deleted since are matched by the recorded name alone."""

    title = "principal"
    parameter_name = "principal"
    placeholder = "agent or user name"

    def filter(self, queryset, value):
        ids = set(get_user_model().objects.filter(username=value).values_list("pk", flat=True))
        ids.update(Agent.objects.filter(name=value).values_list("user_id", flat=True))
        principals = Q(principal_id__in=sorted(ids)) | Q(principal__isnull=True)
        return queryset.filter(principals, principal_name=value)


class OAuthClientFilter(InputFilter):
    """Calls an OAuth client made for a person, by the client's id (exec_oauth_client_idx)."""

    title = "OAuth client"
    parameter_name = "oauth_client"
    placeholder = "client id"

    def filter(self, queryset, value):
        return queryset.filter(oauth_client_id=value)


def executions_changelist_url(**params) -> str:
    return reverse("admin:executions_execution_changelist") + "?" + urlencode(params)


@admin.register(Execution)
class ExecutionAdmin(ExportAdminMixin, NoCountAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Execution records for millions of rows: indexed filters, exact search, no counts."""

    list_display = [
        "created_at",
        "tool_name",
        "principal_name",
        "status",
        "reason_code",
        "error_type",
        "entry_point",
        "execution_time_ms",
        "short_id",
    ]
    # Each filter matches an index of executions_execution: (status|tool|agent|role|principal,
    # -created_at) and (-created_at). Nothing here lists every tool or agent.
    list_filter = [
        time_range_filter("created_at", "created", "time"),
        "status",
        ToolFilter,
        AgentFilter,
        RoleFilter,
        PrincipalFilter,
        OAuthClientFilter,
        integrity_filter(EXECUTION_TARGET),
    ]
    # Exact matches only (see get_search_results): the primary key, exec_request_idx and
    # exec_trace_idx.
    search_fields = ["=id", "=request_id", "=trace_id"]
    search_help_text = "Exact execution id, request id or trace id."
    actions = [*ExportAdminMixin.actions, "cancel_calls"]
    list_select_related = False
    list_per_page = 50
    ordering = ["-created_at"]
    fields = [
        "id",
        "status",
        "reason_code",
        "tool_link",
        "tool_name",
        "tool_version",
        "agent_link",
        "principal_name",
        "role_link",
        "roles_used",
        "approval_link",
        "cached_from_link",
        "input_pretty",
        "raw_input",
        "output_pretty",
        "output_truncated",
        "output_artifact",
        "error_type",
        "error_message",
        "upstream_status",
        "guards_pretty",
        "attempts",
        "created_at",
        "queued_at",
        "started_at",
        "finished_at",
        "deadline_at",
        "execution_time_ms",
        "chars_in",
        "chars_out",
        "cost",
        "input_hash",
        "request_id",
        "trace_id",
        "client_address",
        "entry_point",
        "client_name",
        "client_version",
        "protocol_version",
        "oauth_client_id",
        "oauth_client_name",
        "upstream_connection_id",
        "worker",
        "audit_link",
    ]
    readonly_fields = fields
    export_columns = EXECUTION_COLUMNS
    export_basename = "executions"
    export_chunk_size = EXPORT_CHUNK_SIZE

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = {**findings_context(EXECUTION_TARGET, object_id), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context=context)

    # Inputs and outputs can be large; the list never shows them, the detail page does.
    LIST_DEFERRED = ("input_data", "output_data", "raw_input", "sealed_secrets", "error_message")

    def get_queryset(self, request):
        # Who sees which executions is decided once, for the API and the admin alike.
        visible = selectors.execution_visible_to(request.user)
        return visible.select_related(None).defer(*self.LIST_DEFERRED)

    def get_object(self, request, object_id, from_field=None):
        execution_id = _uuid(str(object_id))
        if execution_id is None:
            return None
        return selectors.execution_visible_to(request.user).filter(pk=execution_id).first()

    def has_view_permission(self, request, obj=None):
        user = request.user
        return (
            authorization.is_reviewer(user)
            or authorization.is_platform_admin(user)
            or super().has_view_permission(request, obj)
        )

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_cancel_permission(self, request):
        # The pipeline decides per call (the caller, the agent's owner, a platform admin);
        # in the admin it is a platform admin's action (reviewers change nothing).
        return authorization.is_platform_admin(request.user)

    @admin.action(
        description="Cancel the selected calls that have not finished (running ones are stopped)",
        permissions=["cancel"],
    )
    def cancel_calls(self, request, queryset):
        cancelled = 0
        unfinished = ("pending_approval", "queued", "running")
        for execution in queryset.filter(status__in=unfinished).select_related("agent"):
            try:
                execution_cancel(actor=request.user, execution=execution)
            except ToolHubError as exc:
                messages.warning(request, f"{str(execution.pk)[:8]}: {exc.message}")
                continue
            cancelled += 1
        finished = queryset.exclude(status__in=unfinished).count()
        messages.success(
            request,
            f"Cancelled {cancelled} call(s)."
            + (f" {finished} had finished already." if finished else ""),
        )

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(request_id=term)
        if TRACE_ID.fullmatch(term):
            condition |= Q(trace_id=term.lower())
        execution_id = _uuid(term)
        if execution_id:
            condition |= Q(pk=execution_id)
        return queryset.filter(condition), False

    @admin.display(description="id")
    def short_id(self, obj):
        return str(obj.pk)[:8]

    @admin.display(description="Tool")
    def tool_link(self, obj):
        if not obj.tool_id:
            return obj.requested_tool or "—"
        url = reverse("admin:registry_tool_change", args=[obj.tool_id])
        return format_html(
            '<a href="{}">{}</a> (<a href="{}">its executions</a>)',
            url,
            obj.tool_name,
            executions_changelist_url(tool=obj.tool_id),
        )

    @admin.display(description="Agent")
    def agent_link(self, obj):
        if not obj.agent_id:
            return "— (a person)"
        url = reverse("admin:registry_agent_change", args=[obj.agent_id])
        return format_html(
            '<a href="{}">{}</a> (<a href="{}">its executions</a>)',
            url,
            obj.agent.name,
            executions_changelist_url(agent=obj.agent_id),
        )

    @admin.display(description="Role used")
    def role_link(self, obj):
        if not obj.role_id:
            return "— (all of the caller's roles)"
        url = reverse("admin:registry_role_change", args=[obj.role_id])
        return format_html('<a href="{}">{}</a>', url, obj.role.name)

    @admin.display(description="Approval")
    def approval_link(self, obj):
        approval = Approval.objects.filter(execution_id=obj.pk).first()
        if approval is None:
            return "—"
        url = reverse("admin:executions_approval_change", args=[approval.pk])
        decided = f" by {approval.decided_by_name}" if approval.decided_by_name else ""
        return format_html('<a href="{}">{}{}</a>', url, approval.get_status_display(), decided)

    @admin.display(description="Answered from the cache of")
    def cached_from_link(self, obj):
        if not obj.cached_from_id:
            return "—"
        url = reverse("admin:executions_execution_change", args=[obj.cached_from_id])
        return format_html('<a href="{}">{}</a>', url, obj.cached_from_id)

    @admin.display(description="Input (secrets removed)")
    def input_pretty(self, obj):
        return arguments_html(obj)

    @admin.display(description="Output")
    def output_pretty(self, obj):
        return pretty_json(obj.output_data)

    @admin.display(description="Guard decisions")
    def guards_pretty(self, obj):
        return pretty_json(obj.guard_decisions) if obj.guard_decisions else "-"

    @admin.display(description="Audit events")
    def audit_link(self, obj):
        events = list(
            AuditEvent.objects.filter(target_type=EXECUTION_TARGET, target_id=str(obj.pk))
            .order_by("id")
            .values("pk", "occurred_at", "action", "actor_name", "sequence")[:AUDIT_ROWS_SHOWN]
        )
        rows = format_html_join(
            "",
            '<li><a href="{}">#{} {}</a> at {} by {}{}</li>',
            (
                (
                    reverse("admin:registry_auditevent_change", args=[e["pk"]]),
                    e["pk"],
                    e["action"],
                    admin_time(e["occurred_at"]),
                    e["actor_name"] or "—",
                    f" (sealed #{e['sequence']})" if e["sequence"] else " (not sealed yet)",
                )
                for e in events
            ),
        )
        url = audit_changelist_url(target_type=EXECUTION_TARGET, target_id=str(obj.pk))
        return format_html('<ul>{}</ul><a href="{}">Audit events of this execution</a>', rows, url)
