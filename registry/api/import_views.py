"""``POST /api/v1/tools/import``: import a catalog file or an OpenAPI document (platform admins)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api.admin_checks import require_platform_admin
from registry.api.base import BaseAPIView
from registry.importers.run import FORMATS, import_content
from toolhub.api.exceptions import error_body
from toolhub.api.openapi.errors import error_response
from toolhub.api.serializers import StrictSerializer


class ToolImportInputSerializer(StrictSerializer):
    format = serializers.ChoiceField(choices=FORMATS, default="auto")
    content = serializers.CharField(trim_whitespace=False)
    dry_run = serializers.BooleanField(default=False)
    base_url = serializers.CharField(required=False, max_length=2000)
    namespace = serializers.CharField(required=False, max_length=40)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=200
    )
    operations = serializers.ListField(
        child=serializers.CharField(max_length=2000), required=False, max_length=2000
    )


class ToolImportView(BaseAPIView):
    @extend_schema(
        request=ToolImportInputSerializer,
        responses={
            200: dict,
            400: error_response(
                "Invalid input, or an import with errors (`import_invalid`, the report in "
                "`details`): nothing was written."
            ),
        },
        description=(
            "Detects the format (tools/mcp catalog, single-tool documents, OpenAPI 3). "
            "With any error nothing is written (400 with the report in details); "
            "dry_run reports without writing. OpenAPI only: tags and operations "
            "(operationIds or 'METHOD /path') select the operations to import; the "
            "others are neither created nor touched. At most TOOLHUB_IMPORT_MAX_TOOLS "
            "tools per request (400 too_many_tools)."
        ),
    )
    def post(self, request):
        require_platform_admin(request.user)
        data = ToolImportInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        report = import_content(
            values["content"],
            actor=request.user,
            fmt=values["format"],
            dry_run=values["dry_run"],
            base_url=values.get("base_url"),
            namespace=values.get("namespace"),
            tags=values.get("tags"),
            operations=values.get("operations"),
            max_tools=settings.TOOLHUB_IMPORT_MAX_TOOLS,
        )
        if not report.ok:
            first = report.errors[0]
            message = f"The import has {len(report.errors)} error(s); nothing was written. {first}"
            return Response(error_body("import_invalid", message, report.as_dict()), status=400)
        return Response(report.as_dict())
