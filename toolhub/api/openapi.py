"""What the published OpenAPI document says about pages, errors and its own format.

- ``paginated(Item)`` and ``page_parameters()`` document a list answered
  through a paginator (``BaseAPIView.paginate`` or a cursor paginator): the
  envelope comes from the paginator's own ``get_paginated_response_schema``.
- ``ERROR_SCHEMA`` is the one error body (``toolhub.api.exceptions``), published
  as the ``Error`` component; ``document_errors`` (a postprocessing hook) gives
  every operation the errors any such operation can answer, and ``errors(...)``
  declares in a view's ``extend_schema`` those only some operations answer.
- ``SchemaView`` serves the document, honouring ``?format=json|yaml``.
"""

from __future__ import annotations

import re
from copy import deepcopy

from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import ComponentIdentity, ResolvedComponent, build_array_type
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation

from toolhub.api.pagination import CursorPagination, PageNumberPagination
from toolhub.api.params import MAX_DB_INTEGER
from toolhub.api.serializers import AnyCaseChoiceField

# Choices in any letter case


def any_case_pattern(choices) -> str:
    """A pattern (ECMA-262, no flags) matching each of ``choices`` in any letter case."""
    words = []
    for choice in choices:
        letters = []
        for char in str(choice):
            pair = {char.lower(), char.upper()}
            letters.append(f"[{''.join(sorted(pair))}]" if len(pair) > 1 else re.escape(char))
        words.append("".join(letters))
    return f"^(?:{'|'.join(words)})$"


class AnyCaseChoiceFieldExtension(OpenApiSerializerFieldExtension):
    """The declared choices, and the same words in any letter case (``HTTP``)."""

    target_class = AnyCaseChoiceField

    def map_serializer_field(self, auto_schema, direction):
        choices = list(self.target.choices)
        return {
            "anyOf": [
                {"type": "string", "enum": choices},
                {"type": "string", "pattern": any_case_pattern(choices)},
            ],
            "description": f"One of {', '.join(choices)}, in any letter case (stored as listed).",
        }


# Pagination


class PaginatedList(serializers.ListSerializer):
    """Stands for one page of ``child`` as ``pagination_class`` answers it (schema only).

    A list serializer, so that the operation still reads as a list (its
    ``operationId`` ends in ``_list``); ``PaginatedListExtension`` maps it.
    """

    def __init__(self, *, pagination_class, **kwargs):
        super().__init__(**kwargs)
        self.pagination_class = pagination_class

    def to_representation(self, data):
        raise NotImplementedError("PaginatedList only describes a page in the OpenAPI document.")


class PaginatedListExtension(OpenApiSerializerExtension):
    target_class = PaginatedList

    def map_serializer(self, auto_schema, direction):
        item = auto_schema.resolve_serializer(self.target.child, direction)
        pagination_class = self.target.pagination_class
        prefix = "Cursor" if issubclass(pagination_class, CursorPagination) else ""
        component = ResolvedComponent(
            name=f"{prefix}Paginated{item.name}List",
            type=ResolvedComponent.SCHEMA,
            schema=pagination_class().get_paginated_response_schema(build_array_type(item.ref)),
            object=ComponentIdentity((type(self.target.child), pagination_class)),
        )
        auto_schema.registry.register_on_missing(component)
        return component.ref


def paginated(item, pagination_class=PageNumberPagination) -> PaginatedList:
    """The 200 body of a list of ``item`` served one page at a time by ``pagination_class``."""
    child = item() if isinstance(item, type) else item
    return PaginatedList(child=child, pagination_class=pagination_class)


def page_parameters(pagination_class=PageNumberPagination) -> list[OpenApiParameter]:
    """The query parameters ``pagination_class`` reads."""
    size = OpenApiParameter(
        pagination_class.page_size_query_param,
        {"type": "integer", "minimum": 1, "maximum": pagination_class.max_page_size},
        description=(
            f"Items per page, 1 to {pagination_class.max_page_size} "
            f"(default {pagination_class.page_size})."
        ),
    )
    if issubclass(pagination_class, CursorPagination):
        where = OpenApiParameter(
            pagination_class.cursor_query_param,
            {"type": "string", "pattern": "^[^\\u0000]*$"},
            description=(
                "Opaque: the `next` or `previous` link's cursor. Leave out (or empty) "
                "for the first page."
            ),
        )
    else:
        where = OpenApiParameter(
            pagination_class.page_query_param,
            {"type": "integer", "minimum": 1, "maximum": MAX_DB_INTEGER},
            description="Page number, from 1.",
        )
    return [where, size]


# Errors

ERROR_COMPONENT = "Error"
ERROR_REF = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}

ERROR_SCHEMA = {
    "type": "object",
    "description": "The body of every error answer.",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": (
                        "What went wrong, for programs: `validation_error`, `parse_error`, "
                        "`not_authenticated`, `authentication_failed`, `permission_denied`, "
                        "`not_found`, `duplicate_name`, `invalid_arguments`, …"
                    ),
                    "example": "validation_error",
                },
                "message": {
                    "type": "string",
                    "description": "What went wrong, for people.",
                },
                "details": {
                    "nullable": True,
                    "description": (
                        "null, or more about the error. Invalid input: a list of "
                        "`{field, message, code}`; invalid call arguments: a list of "
                        "`{path, message, expected}`; some errors give an object "
                        "(an import or sync report, the rate limit reached)."
                    ),
                },
                "execution_id": {
                    "type": "string",
                    "format": "uuid",
                    "description": "Refused calls (`POST /executions`): the recorded refusal.",
                },
            },
        }
    },
}

ERROR_DESCRIPTIONS = {
    400: (
        "Invalid input: a body that is not JSON, or a field or query parameter refused, "
        "an unknown query parameter included (each problem in `details`)."
    ),
    401: (
        "No valid credentials: none sent, or a token that is unknown, revoked or expired, "
        "or whose account or agent is inactive."
    ),
    403: "The caller may not do this (or, signed in by session cookie, sent no CSRF token).",
    404: "Not found, or not visible to the caller (or a page past the last).",
    409: "In conflict with the current state: a name in use, a tool still referenced, a call no longer pending, …",
    411: "The body came chunked, without a `Content-Length` (chunked bodies are not read).",
    413: "The request body is larger than the limit (`TOOLHUB_MAX_REQUEST_BYTES`).",
    414: (
        "The request line (method, path and query string) is longer than 4094 bytes. "
        "ToolHub answers with the Error body (code `request_line_too_long`); behind "
        "gunicorn's WSGI workers, gunicorn refuses such a line first (`--limit-request-line`, "
        "the same 4094 bytes) with an HTML body."
    ),
    415: "The request body is not `application/json`.",
    422: "The call's arguments do not match the tool's input schema (each problem in `details`).",
    429: "A rate limit was reached: `Retry-After` says in how many seconds to try again.",
    502: "An upstream server failed.",
    503: (
        "Try again in `Retry-After` seconds: the database cannot take the request right now "
        "(`database_unavailable`), or a control the call depends on cannot be checked."
    ),
}

RESPONSE_HEADERS = {
    401: {
        "WWW-Authenticate": {
            "schema": {"type": "string"},
            "description": "The scheme to use: `Bearer`.",
        }
    },
    429: {
        "Retry-After": {
            "schema": {"type": "integer"},
            "description": "Seconds until the limit's window resets.",
        }
    },
    503: {
        "Retry-After": {
            "schema": {"type": "integer"},
            "description": "Seconds to wait before trying again.",
        }
    },
}

FREE_FORM_OBJECT = {"type": "object", "additionalProperties": {}}
UNSAFE_METHODS = frozenset({"post", "put", "patch", "delete"})


def error_response(description: str) -> OpenApiResponse:
    """An error answer with its own description, for a view's ``extend_schema`` responses."""
    return OpenApiResponse(response=dict(ERROR_REF), description=description)


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Error answers by status code, with the standard descriptions: ``{**errors(403, 409)}``."""
    return {code: error_response(ERROR_DESCRIPTIONS[code]) for code in codes}


# Answered by ToolHub, or by the HTTP server in front of it first (gunicorn's WSGI
# workers, with an HTML body).
SERVER_ERRORS = {
    414: {
        "application/json": {"schema": ERROR_REF},
        "text/html": {"schema": {"type": "string"}},
    }
}


def _general_errors(method: str, operation: dict) -> list[int]:
    """The error statuses an operation can answer whatever it does."""
    # Every operation refuses query parameters it does not read (BaseAPIView), and
    # reads the database (503 when no connection can be had: toolhub.db.pool).
    codes = [400, 503, *SERVER_ERRORS]
    parameters = operation.get("parameters", [])
    security = operation.get("security")
    if security and {} not in security:
        codes.append(401)
        if method in UNSAFE_METHODS:
            codes.append(403)
    if any(p["in"] == "path" or (p["in"], p["name"]) == ("query", "page") for p in parameters):
        codes.append(404)  # an unknown id, or a page past the last
    if operation.get("requestBody"):
        codes += [411, 413, 415]
    return codes


def document_errors(result, generator, request, public):
    """Postprocessing hook: the ``Error`` component, and the error answers of each operation.

    Codes a view documents itself are kept, but one documented as any object
    (``responses={409: dict}``) gets the ``Error`` schema; the error answers get
    their headers (``WWW-Authenticate``, ``Retry-After``).
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[ERROR_COMPONENT] = deepcopy(ERROR_SCHEMA)
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            responses = operation.setdefault("responses", {})
            for code in _general_errors(method, operation):
                content = SERVER_ERRORS.get(code) or {"application/json": {"schema": ERROR_REF}}
                responses.setdefault(
                    str(code),
                    {"description": ERROR_DESCRIPTIONS[code], "content": deepcopy(content)},
                )
            for code, response in responses.items():
                # Every error answer has the one body: "an object" is that body.
                content = response.get("content", {}).get("application/json")
                if code >= "400" and content and content.get("schema") == FREE_FORM_OBJECT:
                    content["schema"] = dict(ERROR_REF)
            for code, headers in RESPONSE_HEADERS.items():
                if str(code) in responses:
                    responses[str(code)].setdefault("headers", deepcopy(headers))
            operation["responses"] = dict(sorted(responses.items()))
    return result


# Parameters and request bodies

# A query parameter read by ``query_datetime(..., allow_date=True)``.
DATE_OR_DATETIME = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]
}
# Any query parameter: RequestShapeMiddleware refuses NUL characters, reject_unknown empty values.
QUERY_TEXT = {"minLength": 1, "pattern": "^[^\\u0000]*$"}

ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_DB_INTEGER}


def document_parameters(result, generator, request, public):
    """Postprocessing hook: integer ids are read as ``parse_id`` reads them (1 to the
    largest bigint), so the document does not offer ``0`` or ``-1`` as valid ids."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                name = parameter["name"]
                if parameter["in"] == "query" and schema.get("type") == "string":
                    if not {"enum", "format", "pattern"} & set(schema):
                        for key, value in QUERY_TEXT.items():
                            schema.setdefault(key, value)
                if schema.get("type") == "integer" and (name == "id" or name.endswith("_id")):
                    for key, value in ID_SCHEMA.items():
                        schema.setdefault(key, value)
    return result


# Any JSON value but null, in OpenAPI 3.0 (which has no null type).
NOT_NULL = {"anyOf": [{"type": t} for t in ("object", "array", "string", "number", "boolean")]}


def _not_null_json(serializer, schema: dict) -> None:
    """A JSON field that refuses null is documented as any value but null (drf-spectacular
    would say any value, null included)."""
    for name, field in serializer.fields.items():
        documented = schema.get("properties", {}).get(name)
        if (
            isinstance(field, serializers.JSONField)
            and not field.allow_null
            and documented is not None
            and not {"type", "$ref", "anyOf", "oneOf", "allOf"} & set(documented)
        ):
            documented.update(deepcopy(NOT_NULL))


def _not_both(schema: dict, pair) -> dict:
    """At most one of ``pair`` given: a null stands for "not given" where the field allows it."""
    given = {}
    for name in pair:
        field = schema.get("properties", {}).get(name, {})
        if field.get("nullable") and field.get("type"):
            given[name] = {"type": field["type"]}
    rule = {"required": list(pair)}
    if given:
        rule["properties"] = given
    return {"not": rule}


class ClosedSerializerExtension(OpenApiSerializerExtension):
    """Request bodies as the serializer reads them: closed to unknown fields
    (``refuses_unknown_fields``) and with ``exclusive_fields`` (pairs of which at most
    one may be given) and ``one_of_required`` (of which at least one must be)."""

    target_class = serializers.Serializer
    match_subclasses = True

    @classmethod
    def _matches(cls, target) -> bool:
        return super()._matches(target) and any(
            getattr(target, name, None)
            for name in ("refuses_unknown_fields", "exclusive_fields", "one_of_required")
        )

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction != "request":
            return schema
        if getattr(self.target, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        _not_null_json(self.target, schema)
        rules = [_not_both(schema, pair) for pair in getattr(self.target, "exclusive_fields", ())]
        required = getattr(self.target, "one_of_required", ())
        if required:
            rules.append({"anyOf": [{"required": [name]} for name in required]})
        if rules:
            schema["allOf"] = rules
        return schema


# The document itself


class FormatQueryNegotiation(DefaultContentNegotiation):
    """``?format=`` names the renderer (the API's own views turn that off); it wins over Accept.

    An unknown format is a 404, as DRF answers for a format it has no renderer for.
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        fmt = format_suffix or request.query_params.get("format")
        if not fmt:
            return super().select_renderer(request, renderers, format_suffix)
        renderers = self.filter_renderers(renderers, fmt)
        try:  # Accept still picks among this format's media types
            return super().select_renderer(request, renderers, fmt)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class SchemaView(SpectacularAPIView):
    """The OpenAPI document: YAML by default, JSON for ``?format=json`` or ``Accept: application/json``."""

    content_negotiation_class = FormatQueryNegotiation
