"""The audit chain over the API: verification and the signed head, for reviewers."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from registry import authorization
from registry.api.base import BaseAPIView
from registry.services.audit_chain import audit_verify
from registry.services.audit_head import audit_head
from toolhub.api.openapi.errors import errors
from toolhub.api.params import query_bool
from toolhub.exceptions import PermissionDenied


def _require_reviewer(user) -> None:
    if not (authorization.is_reviewer(user) or authorization.is_platform_admin(user)):
        raise PermissionDenied("Only reviewers and platform admins may inspect the audit chain.")


class AuditVerifyView(BaseAPIView):
    known_query_params = ("from_start",)

    @extend_schema(
        parameters=[
            OpenApiParameter("from_start", bool, description="Ignore retention checkpoints")
        ],
        responses={200: dict, **errors(403)},
        description="Recompute the hash chain; `ok` false names the first altered, deleted, inserted or moved event.",
    )
    def get(self, request):
        _require_reviewer(request.user)
        report = audit_verify(from_checkpoint=not query_bool(request.query_params, "from_start"))
        return Response(report.as_dict())


class AuditHeadView(BaseAPIView):
    @extend_schema(
        responses={200: dict, **errors(403)},
        description="The chain's head, signed, to anchor outside.",
    )
    def get(self, request):
        _require_reviewer(request.user)
        return Response(audit_head())
