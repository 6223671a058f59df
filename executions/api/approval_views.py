"""Approvals over the API: the queue for approvers, and decisions."""

from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from executions.api.serializers import ExecutionSerializer
from executions.models import Approval, ApprovalStatus
from executions.services.approvals import (
    approval_decide,
    approval_for,
    approvals_visible_to,
    decision_refusal,
)
from registry.api.base import BaseAPIView
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import query_choice, reject_unknown
from toolhub.api.serializers import StrictSerializer
from toolhub.exceptions import PermissionDenied


class ApprovalSerializer(serializers.ModelSerializer):
    execution = ExecutionSerializer()
    tool_metadata = serializers.SerializerMethodField()
    agent_owner = serializers.SerializerMethodField()

    class Meta:
        model = Approval
        fields = [
            "id",
            "status",
            "input_hash",
            "requested_at",
            "expires_at",
            "decided_by_name",
            "decided_at",
            "reason",
            "required_because",
            "condition_matched",
            "tool_metadata",
            "agent_owner",
            "execution",
        ]

    def get_tool_metadata(self, obj) -> dict:
        tool = obj.execution.tool
        return tool.tool_metadata if tool else {}

    def get_agent_owner(self, obj) -> str | None:
        agent = obj.execution.agent
        return agent.owner.get_username() if agent else None


class DecisionSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


REASON_NEEDED = "Required when rejecting."


class RejectionSerializer(StrictSerializer):
    """A rejection needs a reason: something besides spaces (approval_decide says so too)."""

    reason = serializers.CharField(
        max_length=2000,
        validators=[RegexValidator(r"\S", REASON_NEEDED)],
        error_messages={"required": REASON_NEEDED, "blank": REASON_NEEDED},
    )


class ApprovalListView(BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=ApprovalStatus.values),
            *page_parameters(),
        ],
        responses=paginated(ApprovalSerializer),
    )
    def get(self, request):
        qs = approvals_visible_to(request.user)
        reject_unknown(request.query_params, ("status",))
        status = query_choice(request.query_params, "status", ApprovalStatus.values)
        if status:
            qs = qs.filter(status=status)
        ordering = "requested_at" if status == ApprovalStatus.PENDING else "-requested_at"
        return self.paginate(
            qs.order_by(ordering), ApprovalSerializer, context={"request": request}
        )


class ApprovalDetailView(BaseAPIView):
    @extend_schema(responses=ApprovalSerializer)
    def get(self, request, approval_id):
        approval = approval_for(request.user, approval_id)
        return Response(ApprovalSerializer(approval, context={"request": request}).data)


class ApprovalDecisionView(BaseAPIView):
    approve = True
    decision_serializer = DecisionSerializer

    @extend_schema(request=DecisionSerializer, responses={200: ApprovalSerializer, **errors(409)})
    def post(self, request, approval_id):
        approval = approval_for(request.user, approval_id)
        refusal = decision_refusal(request.user, approval)
        if refusal:  # refuse before looking at the body
            raise PermissionDenied(refusal.message, code=refusal.code)
        data = self.decision_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        approval = approval_decide(
            actor=request.user,
            approval=approval,
            approve=self.approve,
            reason=data.validated_data["reason"],
        )
        approval = approval_for(request.user, approval.pk)
        return Response(ApprovalSerializer(approval, context={"request": request}).data)


class ApprovalRejectView(ApprovalDecisionView):
    approve = False
    decision_serializer = RejectionSerializer

    @extend_schema(request=RejectionSerializer, responses={200: ApprovalSerializer, **errors(409)})
    def post(self, request, approval_id):
        return super().post(request, approval_id)
