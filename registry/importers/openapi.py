"""OpenAPI 3.x: one ``http`` tool per operation.

The tool is named ``<namespace>__<operationId>`` (or ``<method>_<path>`` when
there is no operationId), sanitized to ``[a-zA-Z0-9_-]``, cut to 64 and made
unique. Its description is the operation's summary (else its description). Its
input parameters are the path and query parameters and the top-level
properties of a JSON (or form) request body, with local ``$ref``s resolved.
Configs: ``base_url``, ``endpoint`` (the path with its ``{placeholders}``) and
``method``. Header and cookie parameters, and bodies that are not objects,
are not mapped (each with a warning).

Tools remember their namespace and operation in ``tool_metadata``
(``openapi_namespace``, ``openapi_operation``), so a re-import updates them
(even when an operationId changed) and deactivates the operations that left
the specification.

An import may select operations (``Selection``: tags and operation ids or
``METHOD /path`` keys); the operations it leaves out are neither created nor
touched, and a selector that matches nothing is an error (a typo would
otherwise import nothing and say nothing).
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

from registry.importers import naming
from registry.importers.catalog_files import Parsed
from registry.importers.schema_rows import (
    SchemaProblem,
    json_pointer_get,
    property_to_row,
    resolve_refs,
)
from registry.importers.source import Document, Problem, pointer
from registry.importers.specs import ToolSpec, kind_of
from registry.models.mcp import MCP_SERVER_NAME_PATTERN
from registry.models.tools import ToolType

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_PLACEHOLDER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
META_NAMESPACE = "openapi_namespace"
META_OPERATION = "openapi_operation"
META_REMOVED = "openapi_removed"
FORM = "application/x-www-form-urlencoded"
LOCATIONS = ("path", "query", "header", "cookie")

logger = logging.getLogger(__name__)


def check_target(base_url: Any, namespace: Any) -> list[str]:
    problems = []
    try:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        host = parts.hostname if parts else None
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = host = None
    if not parts or parts.scheme not in ("http", "https") or not host:
        problems.append("base_url: give an absolute http(s) URL")
    elif "@" in parts.netloc:
        # The base URL is stored as a plain (non-secret) config that reviewers can read.
        problems.append(
            "base_url: give a URL without credentials (user:password@); "
            "keep credentials in a secret config, such as an auth config"
        )
    if not isinstance(namespace, str) or not re.match(MCP_SERVER_NAME_PATTERN, namespace):
        problems.append("namespace: use 1 to 40 characters: letters, digits, '_' or '-'")
    return problems


def operation_key(method: str, path: str) -> str:
    """How a tool remembers its operation within its namespace: ``GET /users/{id}``."""
    return f"{method.upper()} {path}"


class Selection:
    """Which operations to import: those with any of ``tags``, or named in ``operations``.

    An operation is named by its operationId or by ``METHOD /path`` (``GET /users/{id}``).
    """

    def __init__(self, tags=(), operations=()):
        self.tags = [t for t in tags if t]
        self.operations = [o for o in operations if o]
        self.matched_tags: set[str] = set()
        self.matched_operations: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.tags or self.operations)

    def picks(self, method: str, path: str, operation: dict) -> bool:
        names = {operation_key(method, path)}
        if isinstance(operation.get("operationId"), str):
            names.add(operation["operationId"])
        tags = operation.get("tags")
        tags = {t for t in tags if isinstance(t, str)} if isinstance(tags, list) else set()
        tag_hits = tags.intersection(self.tags)
        operation_hits = names.intersection(self.operations)
        self.matched_tags |= tag_hits
        self.matched_operations |= operation_hits
        return bool(tag_hits or operation_hits)

    def unmatched(self) -> list[str]:
        return [f"tag '{t}'" for t in self.tags if t not in self.matched_tags] + [
            f"operation '{o}'" for o in self.operations if o not in self.matched_operations
        ]


class _Operation:
    def __init__(self, doc: Document, parsed: Parsed, path: str):
        self.doc = doc
        self.parsed = parsed
        self.path = path
        self.failed = False

    def error(self, where: str, message: str) -> None:
        self.failed = True
        self.parsed.errors.append(self.doc.problem(where, message))

    def warn(self, where: str, message: str) -> None:
        self.parsed.warnings.append(self.doc.problem(where, message, "openapi"))

    def deref(self, node: Any, where: str) -> Any:
        """Follow a ``$ref`` at the top of ``node`` only (path items, parameters, bodies)."""
        for _ in range(20):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node
            ref = node["$ref"]
            if not ref.startswith("#"):
                self.error(where, f"remote $ref {ref!r} is not supported")
                return None
            try:
                node = json_pointer_get(self.doc.data, ref)
            except KeyError:
                self.error(where, f"$ref {ref!r} points nowhere")
                return None
        self.error(where, "$ref chain too long")
        return None

    def resolve(self, node: Any, where: str) -> Any:
        """``node`` with every local ``$ref`` inside it inlined (for schemas)."""
        notes: list[str] = []
        try:
            resolved = resolve_refs(node, self.doc.data, notes, where=where)
        except SchemaProblem as exc:
            self.error(exc.path, exc.message)
            return None
        for note in notes:
            self.warn(where, note)
        return resolved


def _object_parts(schema: dict, at: str) -> tuple[dict, list]:
    """``properties`` and ``required`` of an object schema, checked (``SchemaProblem``)."""
    properties = schema.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise SchemaProblem(
            f"'properties' must be a mapping of names to schemas, found {kind_of(properties)}",
            f"{at}/properties",
        )
    required = schema.get("required")
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        found = kind_of(required) if not isinstance(required, list) else "other items"
        raise SchemaProblem(
            f"'required' must be a list of property names (strings), found {found}",
            f"{at}/required",
        )
    return properties, required


def _flatten_object(schema: dict, at: str) -> dict:
    """Merge ``allOf`` members into one object schema (properties and required).

    ``at`` is the schema's path; a malformed ``properties`` or ``required``
    raises ``SchemaProblem`` with the path of the offending key.
    """
    members = schema.get("allOf")
    own_properties, own_required = _object_parts(schema, at)
    if members is None:
        return schema
    if not isinstance(members, list):
        raise SchemaProblem(f"'allOf' must be a list of schemas, found {kind_of(members)}", at)
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    properties = dict(own_properties)
    required = list(own_required)
    for index, member in enumerate(members):
        if isinstance(member, dict):
            member = _flatten_object(member, f"{at}/allOf/{index}")
            properties.update(member.get("properties") or {})
            required += [r for r in member.get("required") or [] if r not in required]
    merged["properties"] = properties
    if required:
        merged["required"] = required
    merged.setdefault("type", "object")
    return merged


def _raw_name(method: str, path: str, operation: dict) -> str:
    operation_id = operation.get("operationId")
    if isinstance(operation_id, str) and operation_id.strip():
        return operation_id.strip()
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{method}_{path}").strip("_")


def _document_problem(doc: Document) -> Problem | None:
    """Why the document is not an OpenAPI 3 document with paths, if it is not."""
    data = doc.data
    if not isinstance(data, dict):
        return doc.problem("", "an OpenAPI document must be a mapping")
    if "swagger" in data:
        return doc.problem("/swagger", "Swagger 2.0 is not supported: convert it to OpenAPI 3")
    version = data.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        return doc.problem("/openapi", "must be an OpenAPI 3.x version string")
    if not isinstance(data.get("paths"), dict):
        return doc.problem("/paths", "must be a mapping of paths to operations")
    return None


def parse_openapi(
    doc: Document,
    parsed: Parsed,
    *,
    base_url: str,
    namespace: str,
    select: Selection | None = None,
) -> None:
    problem = _document_problem(doc)
    if problem is not None:
        parsed.errors.append(problem)
        return
    used: set[str] = set()
    for path, item in doc.data["paths"].items():
        _parse_path_item(
            doc, parsed, path, item, used, base_url=base_url, namespace=namespace, select=select
        )
    if select:
        for missing in select.unmatched():
            parsed.errors.append(
                doc.problem(
                    "/paths",
                    f"no operation in the document matches the selected {missing}",
                    "not_found",
                )
            )


def _parse_path_item(
    doc: Document,
    parsed: Parsed,
    path: str,
    item: Any,
    used: set[str],
    *,
    base_url: str,
    namespace: str,
    select: Selection | None,
) -> None:
    """The tools of one path's operations, appended to ``parsed.tools`` with unique names."""
    item_path = pointer("paths", path)
    if not path.startswith("/"):
        parsed.errors.append(doc.problem(item_path, "a path must start with '/'"))
        return
    op = _Operation(doc, parsed, item_path)
    item = op.deref(item, item_path)
    if not isinstance(item, dict):
        if not op.failed:
            op.error(item_path, "must be a mapping of methods to operations")
        return
    for method in METHODS:
        operation = item.get(method)
        if operation is None:
            continue
        where = f"{item_path}/{method}"
        if not isinstance(operation, dict):
            parsed.errors.append(doc.problem(where, "an operation must be a mapping"))
            continue
        if select and not select.picks(method, path, operation):
            parsed.unselected.add(operation_key(method, path))
            continue
        spec = _translate_operation(
            _Operation(doc, parsed, where),
            path=path,
            method=method,
            operation=operation,
            shared=item.get("parameters") or [],
            base_url=base_url,
            namespace=namespace,
        )
        if spec is None:
            continue
        spec.name = naming.unique(spec.name, lambda n: n in used)
        used.add(spec.name)
        parsed.tools.append(spec)


def _translate_operation(op: _Operation, *, path: str, method: str, **kwargs) -> ToolSpec | None:
    """``_operation_spec``, with a shape the checks did not foresee reported as an error
    for this operation, not a server error."""
    try:
        return _operation_spec(op, path=path, method=method, **kwargs)
    except (TypeError, AttributeError, ValueError, KeyError) as exc:
        # Only the exception type is logged (its message may quote the document).
        logger.warning("OpenAPI import: %s while translating an operation", type(exc).__name__)
        op.parsed.errors.append(
            op.doc.problem(
                op.path,
                f"cannot translate operation {method.upper()} {path}: part of it "
                f"does not have the shape OpenAPI 3 expects ({type(exc).__name__})",
            )
        )
        return None


def _declared_parameters(
    op: _Operation, operation: dict, shared: list
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


def _parameter_schema(op: _Operation, at: str, param: dict) -> Any:
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


def _path_row_name(op: _Operation, at: str, name: str, inputs: _Inputs) -> str:
    """A path parameter's input name: its own, or made usable (and the endpoint renamed)."""
    if _PLACEHOLDER_NAME.match(name):
        return name
    row_name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if row_name[0].isdigit():
        row_name = f"_{row_name}"
    inputs.endpoint = inputs.endpoint.replace("{" + name + "}", "{" + row_name + "}")
    op.warn(at, f"path parameter '{name}' renamed to '{row_name}'")
    return row_name


def _add_parameter_rows(
    op: _Operation, parameters: dict, placeholders: list[str], inputs: _Inputs
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
    op: _Operation, parameters: dict, placeholders: list[str], inputs: _Inputs
) -> None:
    """Path placeholders without a parameter become required string inputs."""
    declared = {k[1] for k in parameters if k[0] == "path"}
    for name in placeholders:
        if name in declared:
            continue
        if not _PLACEHOLDER_NAME.match(name):
            op.error(op.path, f"path placeholder '{name}' has no parameter and no usable name")
            continue
        op.warn(op.path, f"path placeholder '{name}' is not declared; added as a string")
        inputs.rows.append(
            {"name": name, "type": "string", "required": True, "position": len(inputs.rows)}
        )
        inputs.taken.add(name)


def _body_media(op: _Operation, body_at: str, content: dict, configs: dict) -> tuple[Any, str]:
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


def _add_body_rows(op: _Operation, operation: dict, configs: dict, inputs: _Inputs) -> None:
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


def _operation_metadata(operation: dict, namespace: str, key: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "source": "openapi",
        META_NAMESPACE: namespace,
        META_OPERATION: key,
    }
    tags = operation.get("tags")
    if isinstance(tags, list) and tags and isinstance(tags[0], str):
        metadata["category"] = tags[0]
    return metadata


def _operation_spec(
    op: _Operation,
    *,
    path: str,
    method: str,
    operation: dict,
    shared: list,
    base_url: str,
    namespace: str,
) -> ToolSpec | None:
    parameters = _declared_parameters(op, operation, shared)
    inputs = _Inputs(path)
    placeholders = _PLACEHOLDER.findall(path)
    _add_parameter_rows(op, parameters, placeholders, inputs)
    _add_undeclared_placeholders(op, parameters, placeholders, inputs)
    configs: dict[str, Any] = {"base_url": base_url, "endpoint": inputs.endpoint}
    configs["method"] = method.upper()
    _add_body_rows(op, operation, configs, inputs)
    for note in inputs.notes:
        op.warn(op.path, note)
    if op.failed:
        return None
    summary = operation.get("summary")
    description = operation.get("description")
    text = summary if isinstance(summary, str) and summary.strip() else description
    key = operation_key(method, path)
    return ToolSpec(
        path=op.path,
        document=op.doc,
        name=naming.namespaced(namespace, _raw_name(method, path, operation)),
        type=ToolType.HTTP,
        fields={"description": text.strip() if isinstance(text, str) else ""},
        metadata=_operation_metadata(operation, namespace, key),
        parameters=inputs.rows,
        configs=configs,
        operation=key,
    )


def _row(
    op: _Operation, at: str, name: str, schema: Any, required: bool, position: int, notes
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
