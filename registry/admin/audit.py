"""The audit log in the admin: searchable, filterable, exportable, and read-only for everyone.

Built for millions of rows: no counts, no DISTINCT over the table, filters
that match the table's indexes (action, actor name, target, request id,
time), exact-match search.
"""

from __future__ import annotations

import functools
import json
import uuid

from django.apps import apps
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import Model, Q
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.http import urlencode

from registry import authorization
from registry.admin.integrity import findings_context, integrity_filter, verify_now_view
from registry.admin.mixins import (
    ExportAdminMixin,
    InputFilter,
    NoCountAdminMixin,
    ReadOnlyAdminMixin,
    time_range_filter,
)
from registry.exports import AUDIT_CHUNK_SIZE, AUDIT_COLUMNS
from registry.models import (
    Agent,
    ApiToken,
    AuditEvent,
    RateLimitRule,
    ToolConfig,
    ToolGrant,
    ToolParameter,
)
from toolhub.api.params import parse_id

# Where the admin shows an audit event's target (when it is not app_label_model).
TARGET_ADMIN = {"auth.group": "admin:registry_role_change"}


def admin_time(value, empty: str = "—") -> str:
    """A date-time as every admin page writes it: to the second, with the zone."""
    if value is None:
        return empty
    return date_format(timezone.localtime(value), "DATETIME_FORMAT")


def pretty_json(value) -> str:
    if value is None:
        return "—"
    return format_html(
        '<pre style="white-space:pre-wrap;max-width:60em">{}</pre>',
        json.dumps(value, indent=2, sort_keys=True),
    )


def audit_changelist_url(**params) -> str:
    return reverse("admin:registry_auditevent_changelist") + "?" + urlencode(params)


def target_admin_url(target_type: str, target_id: str) -> str | None:
    if not target_type or not target_id or "." not in target_type:
        return None
    app_label, model = target_type.split(".", 1)
    name = TARGET_ADMIN.get(target_type, f"admin:{app_label}_{model}_change")
    try:
        return reverse(name, args=[target_id])
    except NoReverseMatch:
        return None


@functools.cache
def model_labels() -> list[str]:
    return sorted(model._meta.label_lower for model in apps.get_models())


# A tool's parts: their events belong to the tool's audit trail. Each has a tool_id
# column, and its events' snapshots a "tool_id" key.
TOOL_PARTS = (ToolParameter, ToolConfig, ToolGrant, RateLimitRule)


def _parts_of_tool(object_id: str) -> dict[str, set[str]]:
    """Ids of a tool's parameters, configs, grants and rate limits, by target type:
    those it has, and those its events name (deleted since)."""
    try:
        tool_id = uuid.UUID(object_id)
    except ValueError:
        raise IncorrectLookupParameters(f"'{object_id}' is not a tool id.") from None
    parts = {}
    for model in TOOL_PARTS:
        ids = model.objects.filter(tool_id=tool_id).values_list("pk", flat=True)
        parts[model._meta.label_lower] = {str(pk) for pk in ids}
    _add_recorded_parts(parts, key="tool_id", value=str(tool_id))
    return parts


def _parts_of_agent(object_id: str) -> dict[str, set[str]]:
    """Ids of an agent's tokens: those it has, and those its events name."""
    try:
        agent = Agent.objects.select_related("user").filter(pk=uuid.UUID(object_id)).first()
    except ValueError:
        raise IncorrectLookupParameters(f"'{object_id}' is not an agent id.") from None
    label = ApiToken._meta.label_lower
    if agent is None:
        return {label: set()}
    ids = ApiToken.objects.filter(user_id=agent.user_id).values_list("pk", flat=True)
    parts = {label: {str(pk) for pk in ids}}
    # Token events name their owner by user name (an agent's user name never changes).
    _add_recorded_parts(parts, key="user", value=agent.user.get_username())
    return parts


def _add_recorded_parts(parts: dict[str, set[str]], *, key: str, value: str) -> None:
    """Add the targets of the parts' events whose before or after snapshot has ``key`` =
    ``value``: parts deleted since are found only there. Reads only the events of the
    parts' kinds, through the (target_type, target_id) index."""
    recorded = AuditEvent.objects.filter(target_type__in=sorted(parts)).filter(
        Q(**{f"before__{key}": value}) | Q(**{f"after__{key}": value})
    )
    for target_type, target_id in recorded.values_list("target_type", "target_id"):
        parts[target_type].add(target_id)


# Objects whose audit trail includes their parts' events, by target type.
OBJECT_PARTS = {"registry.tool": _parts_of_tool, "registry.agent": _parts_of_agent}


def object_events_condition(target_type: str, target_id: str) -> Q:
    """The events of one object and, for a tool or an agent, of its parts (see ``OBJECT_PARTS``)."""
    condition = Q(target_type=target_type, target_id=target_id)
    find_parts = OBJECT_PARTS.get(target_type)
    if find_parts is not None:
        for part_type, ids in sorted(find_parts(target_id).items()):
            if ids:
                condition |= Q(target_type=part_type, target_id__in=sorted(ids))
    return condition


def object_audit_url(obj: Model) -> str:
    """The audit log showing the events of ``obj`` and of its parts."""
    return audit_changelist_url(object=f"{obj._meta.label_lower}:{obj.pk}")


def filter_action(queryset, value: str):
    """``execution.`` or ``execution.*`` is a prefix; anything else an exact action."""
    if value.endswith("*") or value.endswith("."):
        return queryset.filter(action__startswith=value.rstrip("*"))
    return queryset.filter(action=value)


class ActionFilter(InputFilter):
    title = "action"
    parameter_name = "action"
    placeholder = "tool.created or execution."
    FAMILIES = [
        ("execution.", "Executions"),
        ("approval.", "Approvals"),
        ("tool.", "Tools"),
        ("tool_config.", "Tool configs"),
        ("tool_parameter.", "Tool parameters"),
        ("grant.", "Grants"),
        ("role.", "Roles"),
        ("agent.", "Agents"),
        ("token.", "Tokens"),
        ("rate_limit.", "Rate limits"),
        ("mcp_server.", "MCP servers"),
    ]

    def lookups(self, request, model_admin):
        return self.FAMILIES

    def filter(self, queryset, value):
        return filter_action(queryset, value)


class ActorFilter(InputFilter):
    title = "actor"
    parameter_name = "actor"
    placeholder = "user name"

    def filter(self, queryset, value):
        return queryset.filter(actor_name=value)


class ObjectFilter(InputFilter):
    """``registry.tool:<id>``: the events of that object and of its parts (a tool's
    parameters, configs, grants and rate limits; an agent's tokens), where
    ``target_type`` and ``target_id`` select only the object's own."""

    title = "object and its parts"
    parameter_name = "object"
    placeholder = "registry.tool:<id>"

    def filter(self, queryset, value):
        target_type, _, target_id = value.partition(":")
        if target_type not in model_labels() or not target_id:
            raise IncorrectLookupParameters(
                f"'{value}' does not name an object: give its kind and id, e.g. registry.tool:<id>."
            )
        return queryset.filter(object_events_condition(target_type, target_id))


class TargetTypeFilter(admin.SimpleListFilter):
    title = "object kind"
    parameter_name = "target_type"

    def lookups(self, request, model_admin):
        return [
            ("executions.execution", "Execution"),
            ("executions.approval", "Approval"),
            ("registry.tool", "Tool"),
            ("registry.toolparameter", "Tool parameter"),
            ("registry.toolconfig", "Tool config"),
            ("registry.toolgrant", "Grant"),
            ("auth.group", "Role"),
            ("registry.agent", "Agent"),
            ("registry.apitoken", "Token"),
            ("registry.ratelimitrule", "Rate limit"),
            ("registry.mcpserver", "MCP server"),
        ]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(target_type=self.value())
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ExportAdminMixin, NoCountAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "occurred_at",
        "actor_name",
        "action",
        "target_type",
        "target_repr",
        "request_id",
        "sequence",
    ]
    list_filter = [
        time_range_filter("occurred_at", "occurred", "time"),
        ActionFilter,
        ActorFilter,
        TargetTypeFilter,
        ObjectFilter,
        integrity_filter("registry.auditevent"),
    ]
    # Exact matches only (see get_search_results): each one an index lookup.
    search_fields = ["=request_id", "=target_id"]
    search_help_text = "Exact request id, target id, or event id / sequence number."
    list_per_page = 50
    # The (action|actor_name, -occurred_at) and occurred_at indexes serve this order.
    ordering = ["-occurred_at", "-id"]
    fields = [
        "id",
        "sequence",
        "occurred_at",
        "actor_name",
        "actor",
        "action",
        "target_type",
        "target_id",
        "target_link",
        "target_repr",
        "request_link",
        "client_address",
        "before_pretty",
        "after_pretty",
        "mac",
        "uid",
        "prev_hash",
        "hash",
        "seal_mac",
        "sealed_at",
    ]
    readonly_fields = fields
    export_columns = AUDIT_COLUMNS
    export_basename = "audit"
    export_chunk_size = AUDIT_CHUNK_SIZE
    change_list_template = "admin/registry/auditevent/change_list.html"

    def get_urls(self):
        verify = path(
            "verify/",
            self.admin_site.admin_view(verify_now_view),
            name="registry_auditevent_verify",
        )
        return [verify, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = {**findings_context("registry.auditevent", object_id), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context=context)

    def get_queryset(self, request):
        # Snapshots can be large; the list never shows them, the detail page does.
        return super().get_queryset(request).defer("before", "after")

    def get_object(self, request, object_id, from_field=None):
        event_id = parse_id(object_id)
        if event_id is None:
            return None
        return AuditEvent.objects.filter(pk=event_id).first()

    def has_view_permission(self, request, obj=None):
        user = request.user
        return (
            authorization.is_reviewer(user)
            or authorization.is_platform_admin(user)
            or super().has_view_permission(request, obj)
        )

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        # target_id alone has no index; (target_type, target_id) has one, and every target
        # type is a model label, so naming them all lets the index serve the search.
        condition = Q(request_id=term) | Q(target_type__in=model_labels(), target_id=term)
        number = parse_id(term)
        if number is not None:
            condition |= Q(pk=number) | Q(sequence=number)
        return queryset.filter(condition), False

    @admin.display(description="Target")
    def target_link(self, obj):
        links = []
        url = target_admin_url(obj.target_type, obj.target_id)
        if url:
            links.append(format_html('<a href="{}">{}</a>', url, obj.target_repr or obj.target_id))
        if obj.target_type and obj.target_id:
            links.append(
                format_html(
                    '<a href="{}">Every event of this {}</a>',
                    audit_changelist_url(target_type=obj.target_type, target_id=obj.target_id),
                    obj.target_type,
                )
            )
        if not links:
            return "—"
        return format_html(" · ".join(["{}"] * len(links)), *links)

    @admin.display(description="Request id")
    def request_link(self, obj):
        if not obj.request_id:
            return "—"
        return format_html(
            '{} (<a href="{}">every event of this request</a>)',
            obj.request_id,
            audit_changelist_url(request_id=obj.request_id),
        )

    @admin.display(description="Before")
    def before_pretty(self, obj):
        return pretty_json(obj.before)

    @admin.display(description="After")
    def after_pretty(self, obj):
        return pretty_json(obj.after)
