"""The registry API: tools, their parameters, configs and derived schema."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from registry import authorization, selectors
from registry.api import serializers as s
from registry.api.base import BaseAPIView
from registry.models import Action, Tool, ToolConfig, ToolParameter
from registry.models.tools import ParameterKind, ToolType
from registry.policy import policy_check
from registry.services import tools as services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import query_bool, query_choice, reject_unknown
from toolhub.exceptions import NotFound, PermissionDenied


class RegistryAPIView(BaseAPIView):
    """Tool endpoints: every lookup goes through the caller's readable tools."""


class ToolListView(RegistryAPIView):
    known_query_params = None

    @extend_schema(
        parameters=[
            OpenApiParameter("search", str, description="Substring of name or description"),
            OpenApiParameter("tool_type", str, enum=ToolType.values),
            OpenApiParameter("is_active", bool),
            OpenApiParameter("category", str, description="tool_metadata.category"),
            *page_parameters(),
        ],
        responses=paginated(s.ToolOutputSerializer),
    )
    def get(self, request):
        params = request.query_params
        reject_unknown(params, ("search", "tool_type", "is_active", "category"))
        filters = {
            "search": params.get("search"),
            "tool_type": query_choice(params, "tool_type", ToolType.values, any_case=True),
            "is_active": query_bool(params, "is_active"),
            "category": params.get("category"),
        }
        qs = selectors.tool_list(queryset=self.tool_queryset(), filters=filters)
        return self.paginate(qs, s.ToolOutputSerializer)

    @extend_schema(
        request=s.ToolInputSerializer,
        responses={201: s.ToolDetailOutputSerializer, **errors(409)},
    )
    def post(self, request):
        policy_check(actor=request.user, action="tool.create")
        data = s.ToolInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tool = services.tool_create(actor=request.user, **data.validated_data)
        tool = selectors.tool_with_details(Tool.objects.filter(pk=tool.pk)).get()
        return Response(s.ToolDetailOutputSerializer(tool).data, status=status.HTTP_201_CREATED)


class ToolDetailView(RegistryAPIView):
    known_query_params = ("hard_delete",)

    def _detail(self, tool_id):
        tool = selectors.tool_with_details(self.tool_queryset().filter(pk=tool_id)).first()
        if tool is None:
            raise NotFound("Tool not found.", code="tool_not_found")
        return Response(s.ToolDetailOutputSerializer(tool).data)

    @extend_schema(responses=s.ToolDetailOutputSerializer)
    def get(self, request, tool_id):
        return self._detail(tool_id)

    @extend_schema(
        request=s.ToolUpdateSerializer,
        responses={200: s.ToolDetailOutputSerializer, **errors(409)},
    )
    def put(self, request, tool_id):
        return self._update(request, tool_id, partial=False)

    @extend_schema(
        request=s.ToolUpdateSerializer,
        responses={200: s.ToolDetailOutputSerializer, **errors(409)},
    )
    def patch(self, request, tool_id):
        return self._update(request, tool_id, partial=True)

    def _update(self, request, tool_id, *, partial: bool):
        tool = self.get_tool(tool_id, action=Action.MANAGE)
        data = s.ToolUpdateSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        # Who may change which field is registry.policy's, checked by the service.
        services.tool_update(actor=request.user, tool=tool, data=dict(data.validated_data))
        return self._detail(tool_id)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "hard_delete", bool, description="Remove the row (only if nothing references it)"
            )
        ],
        responses={204: None, **errors(409)},
    )
    def delete(self, request, tool_id):
        tool = self.get_tool(tool_id, action=Action.MANAGE)
        if query_bool(request.query_params, "hard_delete"):
            services.tool_delete(actor=request.user, tool=tool)
        else:
            services.tool_deactivate(actor=request.user, tool=tool)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ToolSchemaView(RegistryAPIView):
    @extend_schema(responses={200: dict})
    def get(self, request, tool_id):
        tool = self.get_tool(tool_id)
        return Response(tool.input_schema())


class ToolParameterListView(RegistryAPIView):
    known_query_params = ("parameter_type",)

    @extend_schema(
        parameters=[OpenApiParameter("parameter_type", str, enum=ParameterKind.values)],
        responses=s.ToolParameterOutputSerializer(many=True),
    )
    def get(self, request, tool_id):
        tool = self.get_tool(tool_id)
        kind = query_choice(
            request.query_params, "parameter_type", ParameterKind.values, any_case=True
        )
        qs = selectors.parameter_list(tool=tool, parameter_type=kind)
        return Response(s.ToolParameterOutputSerializer(qs, many=True).data)

    @extend_schema(
        request=s.ParameterInputSerializer,
        responses={201: s.ToolParameterOutputSerializer, **errors(409)},
    )
    def post(self, request, tool_id):
        tool = self.get_tool(tool_id, action=Action.MANAGE)
        data = s.ParameterInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        param = services.parameter_create(actor=request.user, tool=tool, **data.validated_data)
        return Response(s.ToolParameterOutputSerializer(param).data, status=status.HTTP_201_CREATED)


class ToolParameterDetailView(RegistryAPIView):
    def get_parameter(self, parameter_id, *, action: str = Action.READ) -> ToolParameter:
        param = (
            ToolParameter.objects.select_related("tool")
            .filter(pk=parameter_id, tool__in=self.tool_queryset())
            .first()
        )
        if param is None:
            raise NotFound("Parameter not found.", code="parameter_not_found")
        if action != Action.READ and not authorization.can(self.request.user, action, param.tool):
            raise PermissionDenied(f"You may not {action} this tool.")
        return param

    @extend_schema(responses=s.ToolParameterOutputSerializer)
    def get(self, request, parameter_id):
        return Response(s.ToolParameterOutputSerializer(self.get_parameter(parameter_id)).data)

    @extend_schema(
        request=s.ParameterUpdateSerializer,
        responses={200: s.ToolParameterOutputSerializer, **errors(409)},
    )
    def put(self, request, parameter_id):
        return self._update(request, parameter_id, partial=False)

    @extend_schema(
        request=s.ParameterUpdateSerializer,
        responses={200: s.ToolParameterOutputSerializer, **errors(409)},
    )
    def patch(self, request, parameter_id):
        return self._update(request, parameter_id, partial=True)

    def _update(self, request, parameter_id, *, partial):
        param = self.get_parameter(parameter_id, action=Action.MANAGE)
        data = s.ParameterUpdateSerializer(
            data=request.data, partial=partial, context={"parameter": param}
        )
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        if not partial and "default" not in values:
            values.setdefault("has_default", False)
        param = services.parameter_update(actor=request.user, parameter=param, data=values)
        return Response(s.ToolParameterOutputSerializer(param).data)

    @extend_schema(responses={204: None})
    def delete(self, request, parameter_id):
        param = self.get_parameter(parameter_id, action=Action.MANAGE)
        services.parameter_delete(actor=request.user, parameter=param)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ToolConfigListView(RegistryAPIView):
    @extend_schema(responses=s.ToolConfigOutputSerializer(many=True))
    def get(self, request, tool_id):
        tool = self.get_tool(tool_id)
        return Response(
            s.ToolConfigOutputSerializer(selectors.config_list(tool=tool), many=True).data
        )

    @extend_schema(
        request=s.ConfigInputSerializer,
        responses={
            201: s.ToolConfigOutputSerializer,
            200: s.ToolConfigOutputSerializer,
            **errors(409),
        },
        description="Creates the key, or replaces its value when it exists.",
    )
    def post(self, request, tool_id):
        tool = self.get_tool(tool_id, action=Action.MANAGE)
        data = s.ConfigInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config, created = services.config_set(actor=request.user, tool=tool, **data.validated_data)
        return Response(
            s.ToolConfigOutputSerializer(config).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class ToolConfigDetailView(RegistryAPIView):
    def get_config(self, tool_id, config_key, *, action: str = Action.READ) -> ToolConfig:
        tool = self.get_tool(tool_id, action=action)
        config = tool.configs.filter(config_key=config_key).first()
        if config is None:
            raise NotFound(
                f"Config '{config_key}' not found on this tool.", code="config_not_found"
            )
        return config

    @extend_schema(responses=s.ToolConfigOutputSerializer)
    def get(self, request, tool_id, config_key):
        return Response(s.ToolConfigOutputSerializer(self.get_config(tool_id, config_key)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, tool_id, config_key):
        config = self.get_config(tool_id, config_key, action=Action.MANAGE)
        services.config_delete(actor=request.user, config=config)
        return Response(status=status.HTTP_204_NO_CONTENT)
