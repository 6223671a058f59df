"""The tool's input JSON Schema, derived from its input parameters (one source of truth)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Keys a fragment may not set because the parameter's own fields own them.
_OWNED_KEYS = {"type", "description", "default"}


def fragment_errors(fragment: Any) -> list[str]:
    """Problems with a parameter's JSON-Schema fragment, as readable messages."""
    if not isinstance(fragment, dict):
        return ["must be a JSON object (a JSON-Schema fragment)"]
    try:
        Draft202012Validator.check_schema(fragment)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        return [f"not a valid JSON Schema at {where}: {exc.message}"]
    return []


def default_errors(param_type: str, fragment: dict, default: Any) -> list[str]:
    schema = parameter_schema(param_type, fragment, "", has_default=False, default=None)
    validator = Draft202012Validator(schema)
    return [
        f"default does not match the parameter's schema: {e.message}"
        for e in validator.iter_errors(default)
    ]


def parameter_schema(
    param_type: str, fragment: dict | None, description: str, *, has_default: bool, default: Any
) -> dict:
    schema: dict[str, Any] = {k: v for k, v in (fragment or {}).items() if k not in _OWNED_KEYS}
    schema["type"] = param_type
    if description:
        schema["description"] = description
    if has_default:
        schema["default"] = default
    return schema


def schema_from_parameters(parameters) -> dict:
    """Build an object schema from an iterable of input ``ToolParameter`` rows."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in parameters:
        properties[param.name] = parameter_schema(
            param.type,
            param.json_schema,
            param.description,
            has_default=param.has_default,
            default=param.default,
        )
        if param.required:
            required.append(param.name)
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def tool_input_schema(tool) -> dict:
    from registry.models.tools import ParameterKind

    params = getattr(tool, "_prefetched_objects_cache", {}).get("parameters")
    if params is None:
        params = tool.parameters.all()
    inputs = sorted(
        (p for p in params if p.parameter_type == ParameterKind.INPUT),
        key=lambda p: (p.position, p.name),
    )
    return schema_from_parameters(inputs)


def tool_output_schema(tool) -> dict:
    from registry.models.tools import ParameterKind

    params = getattr(tool, "_prefetched_objects_cache", {}).get("parameters")
    if params is None:
        params = tool.parameters.all()
    outputs = sorted(
        (p for p in params if p.parameter_type == ParameterKind.OUTPUT),
        key=lambda p: (p.position, p.name),
    )
    schema = schema_from_parameters(outputs)
    schema["additionalProperties"] = True
    return schema
