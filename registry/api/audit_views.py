"""The audit log over the API: a filtered, cursor-paginated list and a streamed export.

Only reviewers and platform admins may read it. Every event carries the
chain fields (``sequence``, ``prev_hash``, ``hash``), so an exported JSON
Lines file can be checked against the chain (``hash = sha256(prev_hash + "|"
+ canonical content)``, see ``registry.services.audit_chain``).
"""

from __future__ import annotations

from django.apps import apps
from django.db.models import F, Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from registry import authorization
from registry.api.base import BaseAPIView
from registry.exports import (
    AUDIT_COLUMNS,
    ExportNegotiationMixin,
    audit_export_response,
    export_format,
)
from registry.models import AuditEvent
from registry.services import agents as agent_services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.inputs import DATE_OR_DATETIME
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.pagination import CursorPagination
from toolhub.api.params import query_datetime, query_id, reject_unknown
from toolhub.exceptions import PermissionDenied

AUDIT_FILTER_PARAMETERS = [
    OpenApiParameter(
        "action",
        str,
        description="Exact action (`tool.created`), or a prefix ending in `.` or `*` (`execution.`)",
    ),
    OpenApiParameter(
        "actor", str, description="The actor's user name, or an agent's name (agent.<name>)"
    ),
    OpenApiParameter("actor_id", int),
    OpenApiParameter("target_type", str, description="e.g. `executions.execution`"),
    OpenApiParameter("target_id", str),
    OpenApiParameter("request_id", str),
    OpenApiParameter(
        "occurred_after", DATE_OR_DATETIME, description="ISO 8601 date or date-time (inclusive)"
    ),
    OpenApiParameter(
        "occurred_before", DATE_OR_DATETIME, description="ISO 8601 date or date-time (exclusive)"
    ),
]


def require_audit_reader(user) -> None:
    if not (authorization.is_reviewer(user) or authorization.is_platform_admin(user)):
        raise PermissionDenied("Only reviewers and platform admins may read the audit log.")


AUDIT_FILTERS = (
    "action",
    "actor",
    "actor_id",
    "target_type",
    "target_id",
    "request_id",
    "occurred_after",
    "occurred_before",
)


def filter_audit_events(queryset, params, *, also=()):
    """The API's audit filters; each one served by an index of registry_auditevent."""
    reject_unknown(params, (*AUDIT_FILTERS, *also))
    action = params.get("action")
    if action:
        if action.endswith("*") or action.endswith("."):
            queryset = queryset.filter(action__startswith=action.rstrip("*"))
        else:
            queryset = queryset.filter(action=action)
    if params.get("actor"):
        # An agent acts as its user "agent.<name>"; executions name it by its own name.
        name = params["actor"]
        agent_user = f"{agent_services.AGENT_USERNAME_PREFIX}{name}"
        queryset = queryset.filter(Q(actor_name=name) | Q(actor_name=agent_user))
    actor_id = query_id(params, "actor_id", what="a user id")
    if actor_id is not None:
        queryset = queryset.filter(actor_id=actor_id)
    for name in ("target_type", "target_id", "request_id"):
        if params.get(name):
            queryset = queryset.filter(**{name: params[name]})
    if params.get("target_id") and not params.get("target_type"):
        # Lets the (target_type, target_id) index answer instead of a full scan.
        queryset = queryset.filter(
            target_type__in=sorted(m._meta.label_lower for m in apps.get_models())
        )
    after = query_datetime(params, "occurred_after", allow_date=True)
    if after:
        queryset = queryset.filter(occurred_at__gte=after)
    before = query_datetime(params, "occurred_before", allow_date=True)
    if before:
        queryset = queryset.filter(occurred_at__lt=before)
    return queryset


class AuditCursorPagination(CursorPagination):
    # Newest first by time: time-window filters then walk the occurred_at index
    # instead of scanning the primary key backwards (4 s → 0.4 ms on 13 M events).
    ordering = ("-occurred_at", "-id")


class AuditEventSerializer(serializers.ModelSerializer):
    actor_id = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField()
    after = serializers.JSONField()

    class Meta:
        model = AuditEvent
        fields = [c.name for c in AUDIT_COLUMNS]


class AuditListView(BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=[
            *AUDIT_FILTER_PARAMETERS,
            *page_parameters(AuditCursorPagination),
        ],
        responses={200: paginated(AuditEventSerializer, AuditCursorPagination), **errors(403)},
        description="Audit events, newest first. Reviewers and platform admins only (403 otherwise).",
    )
    def get(self, request):
        require_audit_reader(request.user)
        queryset = filter_audit_events(AuditEvent.objects.all(), request.query_params)
        paginator = AuditCursorPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(AuditEventSerializer(page, many=True).data)


class AuditExportView(ExportNegotiationMixin, BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=["csv", "jsonl"], description="Default: csv"),
            *AUDIT_FILTER_PARAMETERS,
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
            **errors(403),
        },
        description=(
            "The filtered audit events in chain order (oldest first), streamed as CSV or JSON "
            "Lines, with `sequence`, `prev_hash` and `hash`. Verify from JSON Lines: CSV guards "
            "text starting with = + - @ with a leading '. Reviewers and platform admins only."
        ),
    )
    def get(self, request):
        require_audit_reader(request.user)
        fmt = export_format(request.query_params)
        queryset = filter_audit_events(
            AuditEvent.objects.all(), request.query_params, also=("format",)
        )
        # Chain order (unsealed events last), which the unique index on sequence serves.
        ordered = queryset.order_by(F("sequence").asc(nulls_last=True), "id")
        return audit_export_response(ordered, fmt)
