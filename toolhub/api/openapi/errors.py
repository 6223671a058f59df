"""The one error body and the error answers of each operation.

``ERROR_SCHEMA`` is the body of every error answer (``toolhub.api.exceptions``),
published as the ``Error`` component; ``document_errors`` (a postprocessing hook)
gives every operation the errors any such operation can answer, and ``errors(...)``
declares in a view's ``extend_schema`` those only some operations answer."""

from __future__ import annotations

from copy import deepcopy

from drf_spectacular.utils import OpenApiResponse

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
                "connect_url": {
                    "type": "string",
                    "format": "uri",
                    "description": (
                        "`connection_required` (409): the page where the person connects "
                        "their own account at the tool's upstream provider, then calls again."
                    ),
                },
                "provider": {
                    "type": "string",
                    "description": (
                        "`connection_required`, `person_required`: the slug of the tool's "
                        "upstream provider."
                    ),
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
    409: (
        "In conflict with the current state: a name in use, a tool still referenced, a call "
        "no longer pending, a tool acting with the caller's own upstream account they have "
        "not connected (`connection_required`, with `connect_url`), …"
    ),
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
