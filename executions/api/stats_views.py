"""``GET /api/v1/stats``: usage statistics over the executions the caller may see."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from executions import selectors, stats
from registry.api.base import BaseAPIView
from toolhub.api.openapi.inputs import DATE_OR_DATETIME
from toolhub.api.params import query_choice, query_datetime, query_uuid

STATS_PARAMETERS = [
    OpenApiParameter(
        "from",
        DATE_OR_DATETIME,
        description="ISO 8601 date-time or date (UTC if no offset). Default: 7 days before to.",
    ),
    OpenApiParameter("to", DATE_OR_DATETIME, description="ISO 8601, exclusive. Default: now."),
    OpenApiParameter("group_by", str, enum=list(stats.GROUPINGS), description="Default: tool."),
    OpenApiParameter(
        "interval",
        str,
        enum=list(stats.INTERVALS),
        description="Adds time series (UTC buckets; hourly for ranges up to 31 days).",
    ),
    OpenApiParameter("tool_id", OpenApiTypes.UUID),
    OpenApiParameter("agent_id", OpenApiTypes.UUID),
]


class StatsView(BaseAPIView):
    """Calls, outcomes, denials by reason, latency percentiles and cost, per tool or agent.

    Reviewers and platform admins see every execution; other callers only
    their own and their agents' (``execution_visible_to``).
    """

    known_query_params = ("group_by", "interval", "from", "to", "tool_id", "agent_id")

    @extend_schema(parameters=STATS_PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request):
        params = request.query_params
        group_by = query_choice(params, "group_by", stats.GROUPINGS) or "tool"
        interval = query_choice(params, "interval", stats.INTERVALS)
        start = query_datetime(params, "from", allow_date=True, plus_as_space=True)
        end = query_datetime(params, "to", allow_date=True, plus_as_space=True)
        tool_id = query_uuid(params, "tool_id")
        agent_id = query_uuid(params, "agent_id")
        try:
            window = stats.stats_window(start=start, end=end, interval=interval)
            report = stats.stats_report(
                selectors.execution_visible_to(request.user),
                window=window,
                group_by=group_by,
                interval=interval,
                tool_id=tool_id,
                agent_id=agent_id,
            )
        except stats.StatsParamError as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
        report["filters"] = {
            "tool_id": str(tool_id) if tool_id else None,
            "agent_id": str(agent_id) if agent_id else None,
        }
        return Response(report)


urlpatterns = [path("stats", StatsView.as_view(), name="execution-stats")]
