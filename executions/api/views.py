"""The executions API: request a call, poll it, list, fetch the full output."""

from __future__ import annotations

import logging
from contextlib import contextmanager

from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from executions import selectors
from executions.api.serializers import ExecutionRequestSerializer, ExecutionSerializer
from executions.models import Execution, ExecutionStatus
from executions.services import idempotency, outputs
from executions.services.pipeline import execution_cancel, execution_submit
from registry.api.base import BaseAPIView
from registry.authentication import registry_entries
from registry.oauth.delegation import recorded_client
from toolhub import context
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.pagination import CursorPagination
from toolhub.api.params import parse_id, query_datetime, query_uuid, reject_unknown
from toolhub.exceptions import Conflict, NotFound

logger = logging.getLogger(__name__)


class ExecutionCursorPagination(CursorPagination):
    ordering = ("-created_at", "-id")


_ONE_STATUS = "(" + "|".join(ExecutionStatus.values) + ")"
# ``status``: statuses separated by commas (spaces around them allowed).
STATUS_LIST = f"^ *{_ONE_STATUS} *(, *{_ONE_STATUS} *)*$"

FILTER_PARAMETERS = [
    OpenApiParameter("tool_id", OpenApiTypes.UUID),
    OpenApiParameter("tool", str, description="Tool name"),
    OpenApiParameter("agent_id", OpenApiTypes.UUID),
    OpenApiParameter("role", str, description="Role id or name the call was narrowed to"),
    OpenApiParameter(
        "status",
        {"type": "string", "pattern": STATUS_LIST},
        description="One status or a comma-separated list",
    ),
    OpenApiParameter("created_after", OpenApiTypes.DATETIME, description="ISO 8601"),
    OpenApiParameter("created_before", OpenApiTypes.DATETIME, description="ISO 8601"),
    *page_parameters(ExecutionCursorPagination),
]


EXECUTION_FILTERS = (
    "tool_id",
    "tool",
    "agent_id",
    "role",
    "role_id",
    "status",
    "created_after",
    "created_before",
)


def filter_executions(qs, params, *, also=()):
    reject_unknown(params, (*EXECUTION_FILTERS, *also))
    tool_id = query_uuid(params, "tool_id")
    if tool_id:
        qs = qs.filter(tool_id=tool_id)
    if params.get("tool"):
        qs = qs.filter(tool__name=params["tool"])
    agent_id = query_uuid(params, "agent_id")
    if agent_id:
        qs = qs.filter(agent_id=agent_id)
    role = params.get("role") or params.get("role_id")
    if role:
        role_id = parse_id(role)  # anything else, huge numbers included, is a role name
        qs = qs.filter(role_id=role_id) if role_id is not None else qs.filter(role__name=role)
    if params.get("status"):
        statuses = [s.strip() for s in params["status"].split(",")]
        bad = sorted(set(statuses) - set(ExecutionStatus.values))
        if bad:
            raise ValidationError(
                {
                    "status": [
                        f"Unknown status {', '.join(map(repr, bad))}; "
                        f"use {', '.join(ExecutionStatus.values)}."
                    ]
                }
            )
        qs = qs.filter(status__in=statuses)
    after = query_datetime(params, "created_after")
    if after:
        qs = qs.filter(created_at__gte=after)
    before = query_datetime(params, "created_before")
    if before:
        qs = qs.filter(created_at__lt=before)
    return qs


def visible_to(request):
    """The executions the caller may see (an OAuth client: the calls it made for its person)."""
    return selectors.execution_visible_to(request.user, getattr(request.auth, "delegation", None))


class ExecutionListView(BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=FILTER_PARAMETERS,
        responses=paginated(ExecutionSerializer, ExecutionCursorPagination),
    )
    def get(self, request):
        qs = filter_executions(visible_to(request), request.query_params)
        paginator = ExecutionCursorPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        data = ExecutionSerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        request=ExecutionRequestSerializer,
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                {"type": "string", "pattern": idempotency.KEY_PATTERN},
                location=OpenApiParameter.HEADER,
                required=False,
                description=(
                    "Retry safely: a request repeated with the same key (per caller, 24 h) "
                    "answers the execution the first one made (`Idempotent-Replayed: true`) "
                    "instead of running the tool again (how long it waits does not count); "
                    "reused with other arguments, 400; while the first is still being "
                    "decided, 409; when keys cannot be kept (shared cache down), 503 and "
                    "nothing runs."
                ),
            )
        ],
        responses={
            200: ExecutionSerializer,
            202: ExecutionSerializer,
            **errors(404, 409, 422, 429, 503),
        },
        description=(
            "Run a tool. Answers 202 with the queued execution at once, or with `wait` the "
            "finished execution (200) when it completes in time. Refusals: 404 unknown or "
            "unreadable tool, 409 deactivated (or a listed name that stands for two tools), "
            "403 no execute right, 422 arguments that do not match the schema (each problem "
            "as {path, message, expected}), 503 `queue_unavailable` when the task queue cannot "
            "take the call (it ends failed and never runs: retry); each carries `execution_id` "
            "of the recorded refusal."
        ),
    )
    def post(self, request):
        data = ExecutionRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        held = idempotency.claim(
            request.user, request.headers.get(idempotency.HEADER), request.data
        )
        if held.replay is not None:
            return self._replay(request, held.replay)
        try:
            with context.amend(**recorded_client(getattr(request.auth, "delegation", None))):
                submitted = execution_submit(
                    user=request.user,
                    tool_ref=values.get("tool_id") or values.get("tool"),
                    arguments=values.get("input_data"),
                    wait=values.get("wait"),
                    role_ref=values.get("role_id") or values.get("role"),
                    registry=registry_entries(request),
                    on_admitted=held.admitted,
                )
        finally:
            idempotency.release(held)  # refused: the key is free for the corrected call
        execution, quota = submitted.execution, submitted.quota
        body = ExecutionSerializer(execution, context={"request": request}).data
        headers = quota.headers() if quota else None
        return Response(body, status=200 if execution.is_terminal else 202, headers=headers)

    def _replay(self, request, execution_id: str) -> Response:
        """The execution an earlier request with the same key made, as it is now."""
        execution = visible_to(request).filter(pk=execution_id).first()
        if execution is None:
            raise NotFound("The execution this Idempotency-Key made is gone.", code="not_found")
        body = ExecutionSerializer(execution, context={"request": request}).data
        status = 200 if execution.is_terminal else 202
        return Response(body, status=status, headers={"Idempotent-Replayed": "true"})


class ExecutionsByToolView(BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=FILTER_PARAMETERS,
        responses=paginated(ExecutionSerializer, ExecutionCursorPagination),
    )
    def get(self, request, tool_id):
        if not self.tool_queryset().filter(pk=tool_id).exists():
            raise NotFound("Tool not found.", code="tool_not_found")
        qs = visible_to(request).filter(tool_id=tool_id)
        qs = filter_executions(qs, request.query_params)
        paginator = ExecutionCursorPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(
            ExecutionSerializer(page, many=True, context={"request": request}).data
        )


class ExecutionLookupMixin(BaseAPIView):
    def get_execution(self, execution_id):
        # Agents poll this: the row alone (no joined tool, agent and role, no
        # ordering for a primary-key lookup) compiles and reads in half the time.
        visible = visible_to(self.request).select_related(None)
        try:
            return visible.get(pk=execution_id)
        except Execution.DoesNotExist:
            raise NotFound("Execution not found.", code="execution_not_found") from None


class ExecutionDetailView(ExecutionLookupMixin):
    @extend_schema(responses=ExecutionSerializer)
    def get(self, request, execution_id):
        execution = self.get_execution(execution_id)
        return Response(ExecutionSerializer(execution, context={"request": request}).data)


class ExecutionCancelView(ExecutionLookupMixin):
    @extend_schema(request=None, responses={200: ExecutionSerializer, **errors(409)})
    def post(self, request, execution_id):
        execution = self.get_execution(execution_id)
        execution = execution_cancel(actor=request.user, execution=execution)
        return Response(ExecutionSerializer(execution, context={"request": request}).data)


_ALTERED = (
    "The stored output no longer matches the digest recorded with the call; "
    "it was altered or replaced."
)
_GONE = "The call's stored output artifact is gone from the storage it was kept in."


@contextmanager
def _stored_output():
    """Reading a call's stored output: an altered or missing artifact is the API's 409."""
    try:
        yield
    except outputs.OutputAltered:
        raise Conflict(_ALTERED, code="output_altered") from None
    except OSError:
        raise Conflict(_GONE, code="output_gone") from None


class ExecutionOutputView(ExecutionLookupMixin):
    @extend_schema(responses={200: dict, **errors(409)})
    def get(self, request, execution_id):
        execution = self.get_execution(execution_id)
        if execution.output_artifact:
            with _stored_output():
                handle = outputs.open_artifact(execution)
            return FileResponse(handle, content_type="application/json")
        if execution.output_data is None:
            # Refused, still queued or running, or failed before any answer: say which.
            raise NotFound(
                f"Execution {execution.pk} has no output (status: {execution.status}).",
                code="no_output",
            )
        return Response(execution.output_data)


class ExecutionOutputBlockView(ExecutionLookupMixin):
    """One content block of an MCP tool's output, as its own bytes: an image or audio
    block's data, an embedded resource's blob or text, a text block's text (the
    ``resource_link`` a ``/mcp`` caller gets for a block too large to inline)."""

    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **errors(409)}
    )
    def get(self, request, execution_id, index):
        execution = self.get_execution(execution_id)
        with _stored_output():
            output = outputs.whole_output(execution)
        blocks = outputs.upstream_content(execution, output)
        if blocks is None:
            raise NotFound(
                f"Execution {execution.pk} has no MCP content blocks (its tool is not an MCP "
                "tool, it has no output yet, or its output was cut before it was stored).",
                code="no_output",
            )
        if index >= len(blocks):
            raise NotFound(
                f"Execution {execution.pk}'s output has {len(blocks)} content blocks; there "
                f"is no block {index} (they are numbered from 0).",
                code="no_output",
            )
        body = outputs.block_body(blocks[index])
        if body is None:
            raise NotFound(
                f"Content block {index} of execution {execution.pk} is a "
                f"{blocks[index].get('type')} block with no bytes of its own.",
                code="no_output",
            )
        data, content_type = body
        return HttpResponse(data, content_type=content_type)
