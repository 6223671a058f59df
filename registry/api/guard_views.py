"""Guards over the API: who writes them is ``registry.policy``'s (platform admins; the
service checks it, audited); callers read those of the tools they may read, and the
all-tools ones."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api.base import BaseAPIView
from registry.models import Guard, GuardAction, GuardKind, GuardStage
from registry.policy import policy_check
from registry.services import guards as services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import query_uuid
from toolhub.api.serializers import JSONObjectField, StrictSerializer


class GuardOutputSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(allow_null=True)
    tool_name = serializers.SerializerMethodField()

    class Meta:
        model = Guard
        fields = [
            "id",
            "name",
            "tool_id",
            "tool_name",
            "kind",
            "stage",
            "action",
            "order",
            "config",
            "is_active",
            "description",
            "created_at",
            "updated_at",
        ]

    def get_tool_name(self, obj) -> str | None:
        return obj.tool.name if obj.tool_id else None


class GuardUpdateSerializer(StrictSerializer):
    name = serializers.RegexField(r"^[a-zA-Z0-9_-]{1,64}$", max_length=64)
    kind = serializers.ChoiceField(choices=GuardKind.choices)
    stage = serializers.ChoiceField(
        choices=GuardStage.choices,
        required=False,
        help_text="Omit: the stage the kind (or the python guard's function) runs at.",
    )
    action = serializers.ChoiceField(choices=GuardAction.choices)
    order = serializers.IntegerField(min_value=0, max_value=1_000_000, default=100)
    config = JSONObjectField(
        required=False, default=dict, help_text="The kind's settings (docs/governance.md)."
    )
    is_active = serializers.BooleanField(required=False, default=True)
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )


class GuardInputSerializer(GuardUpdateSerializer):
    tool_id = serializers.UUIDField(
        required=False,
        help_text="Omit for all tools.",
        error_messages={
            "null": "May not be null: omit tool_id to mean all tools, or give a tool's id."
        },
    )


class GuardListView(BaseAPIView):
    known_query_params = ("tool_id",)

    @extend_schema(
        parameters=[OpenApiParameter("tool_id", OpenApiTypes.UUID), *page_parameters()],
        responses=paginated(GuardOutputSerializer),
    )
    def get(self, request):
        readable = self.tool_queryset()
        qs = Guard.objects.select_related("tool").filter(tool__in=readable) | (
            Guard.objects.select_related("tool").filter(tool__isnull=True)
        )
        tool_id = query_uuid(request.query_params, "tool_id")
        if tool_id:
            qs = qs.filter(tool_id=tool_id)
        return self.paginate(qs.order_by("order", "name"), GuardOutputSerializer)

    @extend_schema(
        request=GuardInputSerializer, responses={201: GuardOutputSerializer, **errors(404, 409)}
    )
    def post(self, request):
        policy_check(actor=request.user, action="guard.write")
        data = GuardInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tool = self.optional_tool(values.pop("tool_id", None))
        guard = services.guard_create(actor=request.user, tool=tool, **values)
        return Response(GuardOutputSerializer(guard).data, status=201)


class GuardDetailView(BaseAPIView):
    def get_guard(self, guard_id) -> Guard:
        guard = Guard.objects.select_related("tool").filter(pk=guard_id).first()
        return self.visible_or_404(guard, "Guard not found.", "guard_not_found")

    @extend_schema(responses=GuardOutputSerializer)
    def get(self, request, guard_id):
        return Response(GuardOutputSerializer(self.get_guard(guard_id)).data)

    def _update(self, request, guard_id, partial):
        guard = self.get_guard(guard_id)
        policy_check(actor=request.user, action="guard.write", tool=guard.tool)
        data = GuardUpdateSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        guard = services.guard_update(
            actor=request.user, guard=guard, data=dict(data.validated_data)
        )
        return Response(GuardOutputSerializer(guard).data)

    @extend_schema(
        request=GuardUpdateSerializer, responses={200: GuardOutputSerializer, **errors(409)}
    )
    def put(self, request, guard_id):
        return self._update(request, guard_id, partial=False)

    @extend_schema(
        request=GuardUpdateSerializer, responses={200: GuardOutputSerializer, **errors(409)}
    )
    def patch(self, request, guard_id):
        return self._update(request, guard_id, partial=True)

    @extend_schema(responses={204: None})
    def delete(self, request, guard_id):
        guard = self.get_guard(guard_id)
        services.guard_delete(actor=request.user, guard=guard)
        return Response(status=204)
