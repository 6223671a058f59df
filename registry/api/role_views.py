"""API for roles."""

from __future__ import annotations

from django.contrib.auth.models import Group
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from registry import authorization
from registry.api import role_serializers as s
from registry.api.base import BaseAPIView
from registry.policy import policy_check
from registry.services import roles as role_services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.exceptions import NotFound


def _role_qs():
    return Group.objects.select_related("profile").prefetch_related("permissions__content_type")


# Roles


class RoleListView(BaseAPIView):
    @extend_schema(parameters=page_parameters(), responses=paginated(s.RoleOutputSerializer))
    def get(self, request):
        qs = _role_qs().order_by("name")
        if not (
            authorization.is_platform_admin(request.user) or authorization.is_reviewer(request.user)
        ):
            qs = qs.filter(pk__in=authorization.role_ids_of(request.user))
        return self.paginate(qs, s.RoleOutputSerializer)

    @extend_schema(
        request=s.RoleInputSerializer, responses={201: s.RoleOutputSerializer, **errors(409)}
    )
    def post(self, request):
        policy_check(actor=request.user, action="role.write")  # before the body is read
        data = s.RoleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        role = role_services.role_create(actor=request.user, **data.validated_data)
        return Response(s.RoleOutputSerializer(_role_qs().get(pk=role.pk)).data, status=201)


class RoleDetailView(BaseAPIView):
    def get_role(self, role_id) -> Group:
        role = _role_qs().filter(pk=role_id).first()
        if role is None or not authorization.may_ask_about_role(self.request.user, role):
            raise NotFound("Role not found.", code="role_not_found")
        return role

    @extend_schema(responses=s.RoleOutputSerializer)
    def get(self, request, role_id):
        return Response(s.RoleOutputSerializer(self.get_role(role_id)).data)

    @extend_schema(
        request=s.RoleInputSerializer, responses={200: s.RoleOutputSerializer, **errors(409)}
    )
    def patch(self, request, role_id):
        role = self.get_role(role_id)
        policy_check(actor=request.user, action="role.write")  # before the body is read
        data = s.RoleInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        role = role_services.role_update(
            actor=request.user, role=role, data=dict(data.validated_data)
        )
        return Response(s.RoleOutputSerializer(_role_qs().get(pk=role.pk)).data)

    @extend_schema(responses={204: None, **errors(409)})
    def delete(self, request, role_id):
        role = self.get_role(role_id)
        role_services.role_delete(actor=request.user, role=role)
        return Response(status=204)
