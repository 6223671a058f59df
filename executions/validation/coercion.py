"""Values coerced where the schema's intent is unambiguous, and defaults filled in."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from toolhub import strictjson

_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")

loads_json = strictjson.loads


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _number_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _types(schema: dict) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return kind
    return [kind] if kind else []


def _null_means_absent(schema: Any) -> bool:
    """Whether null for this optional property can only mean "not given"."""
    if not isinstance(schema, dict):
        return False
    kinds = _types(schema)
    if not kinds or "null" in kinds:  # untyped (anyOf, oneOf…) or taking null: as given
        return False
    return schema.get("const", 0) is not None and None not in (schema.get("enum") or [])


def _coerce(value: Any, schema: dict) -> Any:
    if not isinstance(schema, dict):
        return value
    kinds = _types(schema)
    if isinstance(value, str) and kinds:
        return _coerce_text(value, schema, kinds)
    if _not_finite(value):  # reported as such, never turned into "nan"
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _coerce_number(value, kinds)
    if isinstance(value, dict) and ("object" in kinds or "properties" in schema):
        return _coerce_object(value, schema)
    if isinstance(value, list) and ("array" in kinds or "items" in schema):
        items = schema.get("items")
        if isinstance(items, dict):
            return [_coerce(item, items) for item in value]
    return value


def _coerce_text(value: str, schema: dict, kinds: list[str]) -> Any:
    """A string read as the integer, number, boolean, null or JSON text the schema wants."""
    text = value.strip()
    if "integer" in kinds and _INT.match(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts: left to the schema
            return value
    if "number" in kinds and _NUMBER.match(text):
        number = float(text)
        if not math.isfinite(number):  # "1e999": no JSON number, left to the schema
            return value
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
            parsed = loads_json(text)
        except (ValueError, RecursionError):
            return value
        return _coerce(parsed, schema)
    return value


def _coerce_number(value: float, kinds: list[str]) -> Any:
    if "string" in kinds and not ({"integer", "number"} & set(kinds)):
        return str(value)
    if "integer" in kinds and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _coerce_object(value: dict, schema: dict) -> dict:
    props = schema.get("properties", {})
    required = set(schema.get("required") or [])
    result = {}
    for key, item in value.items():
        if item is None and key in props and key not in required and _null_means_absent(props[key]):
            # LLMs send null for an optional argument they leave out: it is left out
            # (its default applies), unless the schema itself takes null.
            continue
        result[key] = _coerce(item, props[key]) if key in props else item
    for key, prop in props.items():
        if key not in result and isinstance(prop, dict) and "default" in prop:
            result[key] = copy.deepcopy(prop["default"])
    return result
