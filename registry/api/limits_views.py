"""Rate-limit rules over the API. Who may write which is ``registry.policy``'s (all-tools
rules: platform admins; a tool's: the 'Set rate limits' right and a manage grant), checked
by the services."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api.base import BaseAPIView
from registry.models import RateLimitRule
from registry.models.limits import RateLimitScope
from registry.policy import policy_check
from registry.services import limits as services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import MAX_DB_INT, query_uuid
from toolhub.api.serializers import StrictSerializer


class RateLimitOutputSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(allow_null=True)
    tool_name = serializers.SerializerMethodField()

    class Meta:
        model = RateLimitRule
        fields = [
            "id",
            "tool_id",
            "tool_name",
            "scope",
            "max_requests",
            "time_window_seconds",
            "is_active",
            "description",
            "created_at",
            "updated_at",
        ]

    def get_tool_name(self, obj) -> str | None:
        return obj.tool.name if obj.tool_id else None


class RateLimitInputSerializer(StrictSerializer):
    tool_id = serializers.UUIDField(
        required=False,
        help_text="Omit for all tools.",
        # Null is refused rather than read as "all tools" (see the grants' serializer).
        error_messages={
            "null": "May not be null: omit tool_id to mean all tools, or give a tool's id."
        },
    )
    scope = serializers.ChoiceField(choices=RateLimitScope.choices, default=RateLimitScope.AGENT)
    max_requests = serializers.IntegerField(min_value=1, max_value=MAX_DB_INT)
    time_window_seconds = serializers.IntegerField(min_value=1, max_value=31 * 24 * 3600)
    is_active = serializers.BooleanField(required=False, default=True)
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )


class RateLimitUpdateSerializer(RateLimitInputSerializer):
    tool_id = None


class RateLimitListView(BaseAPIView):
    known_query_params = ("tool_id",)

    @extend_schema(
        parameters=[OpenApiParameter("tool_id", OpenApiTypes.UUID), *page_parameters()],
        responses=paginated(RateLimitOutputSerializer),
    )
    def get(self, request):
        readable = self.tool_queryset()
        qs = RateLimitRule.objects.select_related("tool").filter(tool__in=readable) | (
            RateLimitRule.objects.select_related("tool").filter(tool__isnull=True)
        )
        tool_id = query_uuid(request.query_params, "tool_id")
        if tool_id:
            qs = qs.filter(tool_id=tool_id)
        return self.paginate(qs.order_by("-created_at"), RateLimitOutputSerializer)

    @extend_schema(
        request=RateLimitInputSerializer,
        responses={201: RateLimitOutputSerializer, **errors(404)},
    )
    def post(self, request):
        data = RateLimitInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tool = self.optional_tool(values.pop("tool_id", None))
        rule = services.rate_limit_create(actor=request.user, tool=tool, **values)
        return Response(RateLimitOutputSerializer(rule).data, status=201)


class RateLimitDetailView(BaseAPIView):
    def get_rule(self, rule_id) -> RateLimitRule:
        rule = RateLimitRule.objects.select_related("tool").filter(pk=rule_id).first()
        return self.visible_or_404(rule, "Rate limit not found.", "rate_limit_not_found")

    @extend_schema(responses=RateLimitOutputSerializer)
    def get(self, request, rule_id):
        return Response(RateLimitOutputSerializer(self.get_rule(rule_id)).data)

    def _update(self, request, rule_id, partial):
        rule = self.get_rule(rule_id)
        policy_check(actor=request.user, action="rate_limit.write", tool=rule.tool)
        data = RateLimitUpdateSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        rule = services.rate_limit_update(
            actor=request.user, rule=rule, data=dict(data.validated_data)
        )
        return Response(RateLimitOutputSerializer(rule).data)

    @extend_schema(request=RateLimitUpdateSerializer, responses=RateLimitOutputSerializer)
    def put(self, request, rule_id):
        return self._update(request, rule_id, partial=False)

    @extend_schema(request=RateLimitUpdateSerializer, responses=RateLimitOutputSerializer)
    def patch(self, request, rule_id):
        return self._update(request, rule_id, partial=True)

    @extend_schema(responses={204: None})
    def delete(self, request, rule_id):
        rule = self.get_rule(rule_id)
        services.rate_limit_delete(actor=request.user, rule=rule)
        return Response(status=204)
