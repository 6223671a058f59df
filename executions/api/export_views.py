"""``GET /api/v1/executions/export``: the filtered executions as one streamed file."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from executions import selectors
from executions.api.views import FILTER_PARAMETERS, filter_executions
from executions.exports import execution_export_response
from registry.api.base import BaseAPIView
from registry.exports import ExportNegotiationMixin, export_format

EXPORT_PARAMETERS = [
    OpenApiParameter("format", str, enum=["csv", "jsonl"], description="Default: csv"),
    *[p for p in FILTER_PARAMETERS if p.name not in {"cursor", "page_size"}],
]


class ExecutionExportView(ExportNegotiationMixin, BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=EXPORT_PARAMETERS,
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
        },
        description=(
            "Every execution the caller may see that matches the filters of `GET /executions`, "
            "oldest first, streamed as CSV or JSON Lines (one execution JSON object per line). "
            "Columns are the fields of the execution JSON; in CSV, JSON values are JSON text "
            "and text starting with = + - @ is prefixed with '."
        ),
    )
    def get(self, request):
        fmt = export_format(request.query_params)
        queryset = filter_executions(
            selectors.execution_visible_to(request.user), request.query_params, also=("format",)
        ).order_by("created_at", "id")
        return execution_export_response(queryset, fmt)
