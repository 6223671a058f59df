"""The REST API and its OpenAPI document: request size, Django REST framework and
drf-spectacular."""

from __future__ import annotations

from toolhub.env import env_int
from toolhub.settings.base import DEBUG

# Request bodies above this size are refused with 413 before parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("TOOLHUB_MAX_REQUEST_BYTES", 2 * 1024 * 1024, minimum=1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "registry.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["toolhub.api.renderers.EncodableJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["toolhub.api.parsers.LimitedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "toolhub.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "toolhub.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # ?format= selects an LLM provider's tool format (registry/me), not a renderer.
    "URL_FORMAT_OVERRIDE": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "ToolHub API",
    "DESCRIPTION": "Register, govern and audit the tools AI agents call.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc assets are served from the sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ToolTypeEnum": "registry.models.tools.ToolType",
        "JSONTypeEnum": "registry.models.tools.JSONType",
        "ParameterKindEnum": "registry.models.tools.ParameterKind",
        "ActionEnum": "registry.models.grants.Action",
        "GuardActionEnum": "registry.models.guards.GuardAction",
        "GuardStageEnum": "registry.models.guards.GuardStage",
        "GuardKindEnum": "registry.models.guards.GuardKind",
    },
    # The error body as a component, and the errors every operation can answer.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "toolhub.api.openapi.errors.document_errors",
        "toolhub.api.openapi.inputs.document_parameters",
        "toolhub.api.openapi.inputs.document_request_bodies",
    ],
}

# Most tools and MCP servers one import through the API or the admin may bring
# (each is written through the services with its audit events, ~20 ms apiece);
# the import_tools / import_openapi commands have no limit.
TOOLHUB_IMPORT_MAX_TOOLS = env_int("TOOLHUB_IMPORT_MAX_TOOLS", 500, minimum=1)
