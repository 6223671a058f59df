"""Checking a call's arguments against the tool's JSON Schema, the way an LLM needs it.

Arguments may arrive as a JSON object or as the JSON text an LLM produced.
Before validation, values are coerced where the intent is unambiguous ("5" for
an integer, "true" for a boolean, a number for a string) and defaults are
filled in. Every problem is reported, each as ``{path, message, expected}``,
so the model can fix its call in one go.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from executions.jsonsafe import is_storable_text

_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class ValidationOutcome:
    ok: bool
    value: Any = None
    errors: list[dict] = field(default_factory=list)
    raw_text: str = ""


def _types(schema: dict) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return kind
    return [kind] if kind else []


def _coerce(value: Any, schema: dict) -> Any:
    if not isinstance(schema, dict):
        return value
    kinds = _types(schema)
    if isinstance(value, str) and kinds:
        text = value.strip()
        if "integer" in kinds and _INT.match(text):
            return int(text)
        if "number" in kinds and _NUMBER.match(text):
            number = float(text)
            return (
                int(number)
                if number.is_integer() and "." not in text and "e" not in text.lower()
                else number
            )
        if "boolean" in kinds and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in kinds and text.lower() == "null":
            return None
        if ("array" in kinds or "object" in kinds) and text[:1] in "[{":
            try:
                parsed = json.loads(text)
            except ValueError:
                return value
            return _coerce(parsed, schema)
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "string" in kinds and not ({"integer", "number"} & set(kinds)):
            return str(value)
        if "integer" in kinds and isinstance(value, float) and value.is_integer():
            return int(value)
    if isinstance(value, dict) and ("object" in kinds or "properties" in schema):
        props = schema.get("properties", {})
        result = {}
        for key, item in value.items():
            result[key] = _coerce(item, props[key]) if key in props else item
        for key, prop in props.items():
            if key not in result and isinstance(prop, dict) and "default" in prop:
                result[key] = copy.deepcopy(prop["default"])
        return result
    if isinstance(value, list) and ("array" in kinds or "items" in schema):
        items = schema.get("items")
        if isinstance(items, dict):
            return [_coerce(item, items) for item in value]
    return value


def _path(error) -> str:
    parts = []
    for part in error.absolute_path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    return "".join(parts) or "$"


def _expected(error) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    keyword = error.validator
    if keyword == "type":
        kinds = error.validator_value
        return " or ".join(kinds) if isinstance(kinds, list) else str(kinds)
    if keyword == "enum":
        return "one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    if keyword == "const":
        return json.dumps(error.validator_value)
    if keyword == "required":
        return "property present"
    if keyword == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return "only these properties: " + (", ".join(allowed) or "(none)")
    if keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        symbol = {
            "minimum": ">=",
            "exclusiveMinimum": ">",
            "maximum": "<=",
            "exclusiveMaximum": "<",
        }
        return f"number {symbol[keyword]} {error.validator_value}"
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        return f"{keyword} {error.validator_value}"
    if keyword == "pattern":
        return f"string matching {error.validator_value}"
    if keyword == "format":
        return f"{error.validator_value} format"
    return f"{keyword}: {json.dumps(error.validator_value, default=str)[:200]}"


def _flatten(errors) -> list:
    out = []
    for error in errors:
        if error.context and error.validator in ("anyOf", "oneOf"):
            out.append(error)
        else:
            out.append(error)
    return out


def _unstorable_text(value: Any, path: str) -> list[dict]:
    """Problems for text a record cannot hold: NUL characters, unpaired surrogates."""
    problems: list[dict] = []
    if isinstance(value, str):
        if not is_storable_text(value):
            problems.append(
                {
                    "path": path or "$",
                    "message": "Text may not contain NUL characters or unpaired surrogates.",
                    "expected": "valid Unicode text",
                }
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            problems += _unstorable_text(key, child) if isinstance(key, str) else []
            problems += _unstorable_text(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problems += _unstorable_text(item, f"{path}[{index}]" if path else f"[{index}]")
    return problems


@lru_cache(maxsize=512)
def _validator_for(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def validate_arguments(arguments: Any, schema: dict) -> ValidationOutcome:
    """Parse, coerce, fill defaults and validate ``arguments``; never raises for bad input."""
    raw_text = ""
    if isinstance(arguments, str | bytes):
        raw_text = arguments.decode(errors="replace") if isinstance(arguments, bytes) else arguments
        if raw_text.strip() == "":
            arguments = {}
        else:
            try:
                arguments = json.loads(raw_text)
            except ValueError as exc:
                return ValidationOutcome(
                    ok=False,
                    errors=[
                        {
                            "path": "$",
                            "message": f"Arguments are not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.",
                            "expected": "a JSON object",
                        }
                    ],
                    raw_text=raw_text,
                )
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ValidationOutcome(
            ok=False,
            errors=[
                {
                    "path": "$",
                    "message": f"Arguments must be a JSON object, not {type(arguments).__name__}.",
                    "expected": "object",
                }
            ],
            raw_text=raw_text,
        )
    value = _coerce(arguments, schema)
    validator = _validator_for(json.dumps(schema, sort_keys=True))
    errors = _unstorable_text(value, "")
    for error in sorted(
        validator.iter_errors(value), key=lambda e: (list(e.absolute_path), e.message)
    ):
        path = _path(error)
        message = error.message
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            for key in extra:
                errors.append(
                    {
                        "path": f"{path}.{key}" if path != "$" else key,
                        "message": f"Unknown argument '{key}'.",
                        "expected": _expected(error),
                    }
                )
            continue
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else ""
            field_path = f"{path}.{missing}" if path != "$" else missing
            errors.append(
                {
                    "path": field_path or path,
                    "message": f"Missing required argument '{missing}'.",
                    "expected": _expected(error),
                }
            )
            continue
        errors.append({"path": path, "message": message, "expected": _expected(error)})
    if errors:
        return ValidationOutcome(ok=False, value=value, errors=errors, raw_text=raw_text)
    return ValidationOutcome(ok=True, value=value, raw_text=raw_text)
