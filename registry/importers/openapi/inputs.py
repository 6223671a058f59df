"""An operation's inputs: path and query parameters and the top-level properties of its body, as parameter rows."""

from __future__ import annotations

import re
from typing import Any

from registry.importers.openapi.body_schemas import _flatten_object
from registry.importers.openapi.operation_context import OperationContext
from registry.importers.source import pointer
from registry.importers.specs import kind_of
from registry.schema_rows import (
    SchemaProblem,
    property_to_row,
)

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_PLACEHOLDER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FORM = "application/x-www-form-urlencoded"
LOCATIONS = ("path", "query", "header", "cookie")


def _declared_parameters(
    op: OperationContext, operation: dict, shared: list
) -> dict[tuple[str, str], tuple[dict, str]]:
    """The path item's shared parameters, then the operation's own, by (in, name)."""
    where = op.path
    parameters: dict[tuple[str, str], tuple[dict, str]] = {}
    own = operation.get("parameters") or []
    for label, items in (("shared", shared), ("own", own)):
        if not isinstance(items, list):
            op.error(f"{where}/parameters", "must be a list")
            continue
        for index, raw in enumerate(items):
            at = (
                f"{op.path.rsplit('/', 1)[0]}/parameters/{index}"
                if label == "shared"
                else (f"{where}/parameters/{index}")
            )
            param = op.deref(raw, at)
            if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                op.error(at, "a parameter needs a name and 'in'")
                continue
            location = param.get("in", "")
            if not isinstance(location, str):
                op.error(
                    f"{at}/in",
                    f"'in' must be one of {', '.join(LOCATIONS)} (a string), "
                    f"found {kind_of(location)}",
                )
                continue
            parameters[(param.get("in", ""), param["name"])] = (param, at)
    return parameters


_UNUSABLE = object()  # a parameter whose schema is malformed (an error was reported)


def _parameter_schema(op: OperationContext, at: str, param: dict) -> Any:
    """The parameter's schema (from ``schema`` or its first ``content`` entry), resolved,
    with its description; ``_UNUSABLE`` when the content entry is malformed."""
    schema = param.get("schema")
    if schema is None and isinstance(param.get("content"), dict) and param["content"]:
        media, media_object = next(iter(param["content"].items()))
        if not isinstance(media_object, dict):
            op.error(
                f"{at}/content{pointer(media)}",
                f"a media type entry must be a mapping (with 'schema'), "
                f"found {kind_of(media_object)}",
            )
            return _UNUSABLE
        schema = media_object.get("schema")
    schema = op.resolve(schema, at) if isinstance(schema, dict) else {"type": "string"}
    schema = dict(schema) if isinstance(schema, dict) else {"type": "string"}
    if isinstance(param.get("description"), str):
        schema["description"] = param["description"]
    return schema


class _Inputs:
    """The rows an operation's inputs become, the names taken, and its endpoint."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.rows: list[dict] = []
        self.taken: set[str] = set()
        self.notes: list[str] = []

    def add(self, row: dict | None, name: str) -> None:
        if row is not None and name not in self.taken:
            self.taken.add(name)
            self.rows.append(row)


def _path_row_name(op: OperationContext, at: str, name: str, inputs: _Inputs) -> str:
    """A path parameter's input name: its own, or made usable (and the endpoint renamed)."""
    if _PLACEHOLDER_NAME.fullmatch(name):
        return name
    row_name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if row_name[0].isdigit():
        row_name = f"_{row_name}"
    inputs.endpoint = inputs.endpoint.replace("{" + name + "}", "{" + row_name + "}")
    op.warn(at, f"path parameter '{name}' renamed to '{row_name}'")
    return row_name


def _add_parameter_rows(
    op: OperationContext, parameters: dict, placeholders: list[str], inputs: _Inputs
) -> None:
    """Path and query parameters as inputs; header and cookie ones are warned about."""
    for (location, name), (param, at) in parameters.items():
        if location not in ("path", "query"):
            op.warn(at, f"{location} parameter '{name}' is not mapped to an input")
            continue
        row_name = name
        if location == "path":
            if name not in placeholders:
                op.warn(at, f"path parameter '{name}' does not appear in the path; skipped")
                continue
            row_name = _path_row_name(op, at, name, inputs)
        schema = _parameter_schema(op, at, param)
        if schema is _UNUSABLE:
            continue
        required = location == "path" or param.get("required") is True
        inputs.add(
            _row(op, at, row_name, schema, required, len(inputs.rows), inputs.notes), row_name
        )


def _add_undeclared_placeholders(
    op: OperationContext, parameters: dict, placeholders: list[str], inputs: _Inputs
) -> None:
    """Path placeholders without a parameter become required string inputs."""
    declared = {k[1] for k in parameters if k[0] == "path"}
    for name in placeholders:
        if name in declared:
            continue
        if not _PLACEHOLDER_NAME.fullmatch(name):
            op.error(op.path, f"path placeholder '{name}' has no parameter and no usable name")
            continue
        op.warn(op.path, f"path placeholder '{name}' is not declared; added as a string")
        inputs.rows.append(
            {"name": name, "type": "string", "required": True, "position": len(inputs.rows)}
        )
        inputs.taken.add(name)


def _body_media(
    op: OperationContext, body_at: str, content: dict, configs: dict
) -> tuple[Any, str]:
    """The JSON (else form) media type entry of a request body and its path; None when
    there is none usable (a warning or an error says why)."""
    media = next((m for m in content if m.split(";")[0].strip().endswith("json")), None)
    if media is None and FORM in content:
        media = FORM
        configs["headers"] = {"Content-Type": FORM}
    if media is None:
        op.warn(body_at, f"body types {sorted(content)} are not mapped to inputs")
        return None, body_at
    media_at = f"{body_at}/content{pointer(media)}"
    media_object = content[media]
    if media_object is not None and not isinstance(media_object, dict):
        op.error(
            media_at,
            f"a media type entry must be a mapping (with 'schema'), found {kind_of(media_object)}",
        )
        return None, media_at
    return media_object or {}, media_at


def _add_body_rows(op: OperationContext, operation: dict, configs: dict, inputs: _Inputs) -> None:
    """The top-level properties of a JSON (or form) object body as inputs."""
    body = operation.get("requestBody")
    if body is None:
        return
    body_at = f"{op.path}/requestBody"
    body = op.deref(body, body_at)
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, dict):
        op.error(body_at, "a request body needs 'content'")
        return
    media_object, media_at = _body_media(op, body_at, content, configs)
    if media_object is None:
        return
    schema_at = f"{media_at}/schema"
    schema = op.resolve(media_object.get("schema"), schema_at)
    try:
        schema = _flatten_object(schema, schema_at) if isinstance(schema, dict) else None
    except SchemaProblem as exc:
        op.error(exc.path, exc.message)
        return
    properties = schema.get("properties") if schema else None
    if not isinstance(properties, dict) or not properties:
        op.warn(body_at, "the body is not an object with properties; not mapped")
        return
    body_required = body.get("required") is True
    required_names = schema.get("required") or []
    for prop_name, prop in properties.items():
        at = f"{schema_at}/properties{pointer(prop_name)}"
        if prop_name in inputs.taken:
            op.warn(at, f"body property '{prop_name}' clashes with a parameter")
            continue
        required = body_required and prop_name in required_names
        row = _row(op, at, prop_name, prop, required, len(inputs.rows), inputs.notes)
        if row is not None:
            inputs.taken.add(prop_name)
            inputs.rows.append(row)


def _row(
    op: OperationContext, at: str, name: str, schema: Any, required: bool, position: int, notes
) -> dict | None:
    try:
        row = property_to_row(
            name,
            schema,
            required=required,
            position=position,
            warnings=notes,
            label=name,
        )
    except SchemaProblem as exc:
        if "parameter name" in exc.message:
            op.warn(at, f"{exc.message}; skipped")
        else:
            op.error(at, exc.message)
        return None
    row["parameter_type"] = "input"
    return row
