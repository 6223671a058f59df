"""Toolsets over the API: platform admins write, reviewers read, everyone else gets 403."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry import authorization
from registry.api.base import BaseAPIView
from registry.models import Tool, Toolset
from registry.policy import policy_check
from registry.services import toolsets as services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.serializers import StrictSerializer
from toolhub.exceptions import NotFound, PermissionDenied


class ToolsetOutputSerializer(serializers.ModelSerializer):
    tools = serializers.SerializerMethodField()
    endpoint = serializers.SerializerMethodField()

    class Meta:
        model = Toolset
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "is_active",
            "endpoint",
            "tools",
            "created_at",
            "updated_at",
        ]

    def get_tools(self, obj) -> list[dict]:
        return [{"id": str(t.pk), "name": t.name} for t in obj.tools.order_by("name")]

    def get_endpoint(self, obj) -> str:
        return f"/mcp/{obj.slug}"


class ToolsetInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    slug = serializers.SlugField(max_length=64)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    is_active = serializers.BooleanField(required=False, default=True)
    tool_ids = serializers.ListField(
        child=serializers.UUIDField(), required=False, default=list, max_length=10_000
    )


def _check_may_read(user) -> None:
    if not (authorization.is_platform_admin(user) or authorization.is_reviewer(user)):
        raise PermissionDenied("Only platform admins and reviewers may see toolsets.")


def _tools(view: BaseAPIView, ids) -> list[Tool]:
    """The tools ``ids`` name, each one the caller may read (else 400 naming it)."""
    wanted = list(dict.fromkeys(ids))
    found = {t.pk: t for t in view.tool_queryset().filter(pk__in=wanted)}
    missing = [str(i) for i in wanted if i not in found]
    if missing:
        raise serializers.ValidationError({"tool_ids": [f"Unknown tool ids: {', '.join(missing)}"]})
    return [found[i] for i in wanted]


class ToolsetListView(BaseAPIView):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(ToolsetOutputSerializer), **errors(403)},
    )
    def get(self, request):
        _check_may_read(request.user)
        return self.paginate(
            Toolset.objects.prefetch_related("tools").order_by("name"), ToolsetOutputSerializer
        )

    @extend_schema(
        request=ToolsetInputSerializer,
        responses={201: ToolsetOutputSerializer, **errors(403, 409)},
    )
    def post(self, request):
        policy_check(actor=request.user, action="toolset.write")
        data = ToolsetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tools = _tools(self, values.pop("tool_ids"))
        toolset = services.toolset_create(actor=request.user, tools=tools, **values)
        return Response(ToolsetOutputSerializer(toolset).data, status=201)


class ToolsetDetailView(BaseAPIView):
    def get_toolset(self, toolset_id) -> Toolset:
        toolset = Toolset.objects.filter(pk=toolset_id).first()
        if toolset is None:
            raise NotFound("Toolset not found.", code="toolset_not_found")
        return toolset

    @extend_schema(responses={200: ToolsetOutputSerializer, **errors(403, 404)})
    def get(self, request, toolset_id):
        _check_may_read(request.user)
        return Response(ToolsetOutputSerializer(self.get_toolset(toolset_id)).data)

    @extend_schema(
        request=ToolsetInputSerializer,
        responses={200: ToolsetOutputSerializer, **errors(403, 404, 409)},
    )
    def patch(self, request, toolset_id):
        policy_check(actor=request.user, action="toolset.write")
        toolset = self.get_toolset(toolset_id)
        data = ToolsetInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tools = _tools(self, values.pop("tool_ids")) if "tool_ids" in values else None
        toolset = services.toolset_update(
            actor=request.user, toolset=toolset, data=values, tools=tools
        )
        return Response(ToolsetOutputSerializer(toolset).data)

    @extend_schema(responses={204: None, **errors(403, 404)})
    def delete(self, request, toolset_id):
        policy_check(actor=request.user, action="toolset.write")
        services.toolset_delete(actor=request.user, toolset=self.get_toolset(toolset_id))
        return Response(status=204)
