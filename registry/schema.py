"""The tool's input JSON Schema, derived from its input parameters (one source of truth)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import NoSuchResource

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Keys a fragment may not set because the parameter's own fields own them.
_OWNED_KEYS = {"type", "description", "default"}


# Keywords that make a validator look a schema up elsewhere: a URL it would fetch
# (from the web process, past the egress guard), a file it would read, or a pointer
# into a document the fragment does not own once it is placed in the tool's schema.
_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


# A parameter's kind (the values of ``registry.models.tools.ParameterKind``).
INPUT_KIND = "input"
OUTPUT_KIND = "output"


def _reference(fragment: dict) -> str | None:
    """Where the first reference keyword of ``fragment`` sits (a JSON pointer), if any."""
    stack: list[tuple[Any, str]] = [(fragment, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _REFERENCE_KEYWORDS:
                    return f"{path}/{key}"
                stack.append((value, f"{path}/{key}"))
        elif isinstance(node, list):
            stack.extend((value, f"{path}/{index}") for index, value in enumerate(node))
    return None


def fragment_errors(fragment: Any) -> list[str]:
    """Problems with a JSON-Schema fragment (a parameter's, an approval condition), as
    readable messages."""
    if not isinstance(fragment, dict):
        return ["must be a JSON object (a JSON-Schema fragment)"]
    try:
        key = json.dumps(fragment, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON data: checked as it is, not remembered
        return _fragment_errors(fragment)
    errors = _CHECKED.get(key)
    if errors is None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        errors = _CHECKED[key] = _fragment_errors(fragment)
    return list(errors)


# Checking a fragment against the meta-schema is the costliest part of saving a
# parameter (an OpenAPI import of 500 operations spent 15 % of its time there), and
# the same few fragments ({"minimum": 0}, {"format": "email"}) recur: remember them.
_CHECKED: dict[str, list[str]] = {}
_CHECKED_MAX = 4096


def _fragment_errors(fragment: dict) -> list[str]:
    try:
        Draft202012Validator.check_schema(fragment)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        return [f"not a valid JSON Schema at {where}: {exc.message}"]
    where = _reference(fragment)
    if where is not None:
        return [f"references are not supported (at {where}): write the schema inline"]
    return []


def _no_retrieval(uri: str):
    raise NoSuchResource(ref=uri)


# Validators are built with this registry: a reference to anything but the schema
# itself (and the JSON Schema meta-schemas) is an error, never a fetch or a file read.
NO_RETRIEVAL = Registry(retrieve=_no_retrieval)


def default_errors(param_type: str, fragment: dict, default: Any) -> list[str]:
    schema = parameter_schema(param_type, fragment, "", has_default=False, default=None)
    validator = Draft202012Validator(schema, registry=NO_RETRIEVAL)
    return [
        f"default does not match the parameter's schema: {e.message}"
        for e in validator.iter_errors(default)
    ]


# The original module's clients write a parameter's default as text (``default_value``).
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,300}")
_NUMBER_TEXT = re.compile(
    r"[+-]?([0-9]{1,300}(\.[0-9]{0,300})?|\.[0-9]{1,300})([eE][+-]?[0-9]{1,4})?"
)
_WRITTEN_AS = {
    "integer": 'an integer, such as "5"',
    "number": 'a number, such as "2.5"',
    "boolean": '"true" or "false"',
    "array": "a JSON array, such as [1, 2]",
    "object": 'a JSON object, such as {"key": 1}',
    "null": '"null"',
}


def default_from_text(param_type: str, text: str) -> Any:
    """The default ``text`` stands for, read per the parameter's JSON type: a string as
    it is, a number or boolean from its usual spelling, an array or object from its
    JSON. Raises ``ValueError`` (saying what the text should look like) when it
    stands for no value of that type."""
    if param_type == "string":
        return text
    word = text.strip()
    value: Any = ValueError
    if param_type == "integer" and _INTEGER_TEXT.fullmatch(word):
        value = int(word)
    elif param_type == "number" and _NUMBER_TEXT.fullmatch(word):
        number = float(word)
        value = int(word) if _INTEGER_TEXT.fullmatch(word) else number
        if not math.isfinite(number):
            value = ValueError
    elif param_type == "boolean" and word.lower() in ("true", "false"):
        value = word.lower() == "true"
    elif param_type == "null" and word.lower() in ("null", "none"):
        value = None
    elif param_type in ("array", "object"):
        try:
            parsed = json.loads(word, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            parsed = ValueError
        if isinstance(parsed, list if param_type == "array" else dict):
            value = parsed
    if value is ValueError:
        expected = _WRITTEN_AS.get(param_type, f"a {param_type}")
        raise ValueError(f"must be {expected} (the parameter's type is {param_type})")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def default_as_text(param_type: str, default: Any) -> str:
    """``default`` written as ``default_from_text`` reads it back."""
    if param_type == "string" and isinstance(default, str):
        return default
    return json.dumps(default, ensure_ascii=False)


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
    params = getattr(tool, "_prefetched_objects_cache", {}).get("parameters")
    if params is None:
        params = tool.parameters.all()
    inputs = sorted(
        (p for p in params if p.parameter_type == INPUT_KIND),
        key=lambda p: (p.position, p.name),
    )
    return schema_from_parameters(inputs)


def tool_output_schema(tool) -> dict | None:
    """The object schema of the tool's declared output parameters (None: it declares none).

    Open to other keys: the output parameters describe what a tool returns, they do
    not promise nothing else comes back."""
    params = getattr(tool, "_prefetched_objects_cache", {}).get("parameters")
    if params is None:
        params = tool.parameters.all()
    outputs = sorted(
        (p for p in params if p.parameter_type == OUTPUT_KIND),
        key=lambda p: (p.position, p.name),
    )
    if not outputs:
        return None
    schema = schema_from_parameters(outputs)
    del schema["additionalProperties"]
    return schema
