"""Checking a call's arguments against the tool's JSON Schema, the way an LLM needs it.

Arguments may arrive as a JSON object or as the JSON text an LLM produced.
Before validation, values are coerced where the intent is unambiguous ("5" for
an integer, "true" for a boolean, a number for a string) and defaults are
filled in. Every problem is reported, each as ``{path, message, expected}``,
so the model can fix its call in one go.

What no JSON record can hold is refused, whichever way it arrives: ``NaN`` and
``Infinity`` (and numbers too large for a float), nesting deeper than
``MAX_DEPTH`` levels, NUL characters and unpaired surrogates (in values and in
argument names). Problems echo names and text made storable (U+FFFD in place).
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from referencing.exceptions import Unresolvable

from executions.jsonsafe import MAX_DEPTH, is_storable_text, json_safe, storable_text
from registry.schema import NO_RETRIEVAL
from toolhub import strictjson
from toolhub.strictjson import NotJSONNumber

_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class ValidationOutcome:
    ok: bool
    value: Any = None
    errors: list[dict] = field(default_factory=list)
    raw_text: str = ""


# Arguments given as JSON text are read as JSON proper (no NaN, Infinity or 1e999).
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
    if _not_finite(value):  # reported as such, never turned into "nan"
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "string" in kinds and not ({"integer", "number"} & set(kinds)):
            return str(value)
        if "integer" in kinds and isinstance(value, float) and value.is_integer():
            return int(value)
    if isinstance(value, dict) and ("object" in kinds or "properties" in schema):
        props = schema.get("properties", {})
        required = set(schema.get("required") or [])
        result = {}
        for key, item in value.items():
            if (
                item is None
                and key in props
                and key not in required
                and _null_means_absent(props[key])
            ):
                # LLMs send null for an optional argument they leave out: it is left out
                # (its default applies), unless the schema itself takes null.
                continue
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


def _problem(path: str, message: str, expected: str) -> dict:
    return {"path": path or "$", "message": message, "expected": expected}


def _unrepresentable(value: Any, path: str) -> list[dict]:
    """Problems for values a record cannot hold: NUL characters and unpaired
    surrogates (in text and in names), NaN and infinite numbers.

    Recursive: called only on values no deeper than ``MAX_DEPTH``.
    """
    problems: list[dict] = []
    if isinstance(value, str):
        if not is_storable_text(value):
            problems.append(
                _problem(
                    path,
                    "Text may not contain NUL characters or unpaired surrogates.",
                    "valid Unicode text",
                )
            )
    elif _not_finite(value):
        problems.append(
            _problem(
                path,
                f"{_number_name(value)} is not a JSON number; numbers must be finite.",
                "a finite number",
            )
        )
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and not is_storable_text(key):
                problems.append(
                    _problem(
                        child,
                        "Property names may not contain NUL characters or unpaired surrogates.",
                        "valid Unicode text",
                    )
                )
            problems += _unrepresentable(item, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problems += _unrepresentable(item, f"{path}[{index}]" if path else f"[{index}]")
    return problems


def _too_deep(arguments: dict) -> str | None:
    """The first argument nested deeper than ``MAX_DEPTH`` levels (the arguments
    object is level 1), or None. Iterative, so any depth is measured; a container
    inside itself is too deep too (the walk ends)."""
    for name, item in arguments.items():
        if strictjson.nested_deeper_than(item, MAX_DEPTH, level=2):
            return str(name)
    return None


def _echoable(problems: list[dict]) -> list[dict]:
    """Problems whose text any client and record can take: names and messages
    quoting a caller's text get U+FFFD for NUL characters and unpaired surrogates."""
    return [{key: storable_text(text) for key, text in problem.items()} for problem in problems]


# A tool's "pattern" runs against a caller's text in the web process. Python's re
# can backtrack for minutes on patterns such as (a|aa)+$; the regex module takes a
# time limit, so a pattern that would backtrack that long is a clear problem instead.
PATTERN_TIMEOUT_SECONDS = 0.1


@lru_cache(maxsize=1024)
def _compiled(pattern: str):
    return regex.compile(pattern)


def _search(pattern: str, text: str):
    """``regex.search`` within ``PATTERN_TIMEOUT_SECONDS``; a problem message if it cannot."""
    try:
        return bool(_compiled(pattern).search(text, timeout=PATTERN_TIMEOUT_SECONDS)), ""
    except TimeoutError:
        return False, (
            f"Could not be checked against the pattern {pattern!r} within "
            f"{PATTERN_TIMEOUT_SECONDS:g} s (the pattern backtracks too much on this text)"
        )
    except regex.error as exc:
        return False, f"The tool's pattern {pattern!r} is not a usable regular expression ({exc})"


def _pattern(validator, pattern, instance, schema):
    if not validator.is_type(instance, "string"):
        return
    matched, problem = _search(pattern, instance)
    if problem:
        yield ValidationError(problem)
    elif not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            matched, problem = _search(pattern, key)
            if problem:
                yield ValidationError(problem, path=[key])
            elif matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_DEFAULT_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(validator, additional, instance, schema):
    """jsonschema's, with the patternProperties match under the time limit too."""
    patterns = schema.get("patternProperties")
    if not patterns or not validator.is_type(instance, "object"):
        yield from _DEFAULT_ADDITIONAL(validator, additional, instance, schema)
        return
    properties = schema.get("properties", {})
    extras = []
    for key in instance:
        if key in properties:
            continue
        outcomes = [_search(pattern, key) for pattern in patterns]
        if any(problem for _, problem in outcomes):
            continue  # already reported by patternProperties
        if not any(matched for matched, _ in outcomes):
            extras.append(key)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in sorted(extras))
        verb = "does" if len(extras) == 1 else "do"
        shown = ", ".join(repr(each) for each in sorted(patterns))
        yield ValidationError(f"{joined} {verb} not match any of the regexes: {shown}")


_Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


@lru_cache(maxsize=512)
def _validator_for(schema_json: str) -> Draft202012Validator:
    return _Validator(json.loads(schema_json), registry=NO_RETRIEVAL)


def validate_arguments(arguments: Any, schema: dict) -> ValidationOutcome:
    """Parse, coerce, fill defaults and validate ``arguments``; never raises for bad input."""
    raw_text = ""
    if isinstance(arguments, str | bytes):
        raw_text = arguments.decode(errors="replace") if isinstance(arguments, bytes) else arguments
        if raw_text.strip() == "":
            arguments = {}
        else:
            try:
                arguments = loads_json(raw_text)
            except RecursionError:
                return _refused(_depth_problem("$"), raw_text)
            except NotJSONNumber as exc:
                return _refused(
                    _problem("$", f"Arguments are not valid JSON: {exc}.", "a JSON object"),
                    raw_text,
                )
            except ValueError as exc:
                where = (
                    f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                    if isinstance(exc, json.JSONDecodeError)
                    else str(exc)
                )
                return _refused(
                    _problem("$", f"Arguments are not valid JSON: {where}.", "a JSON object"),
                    raw_text,
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
    value = _coerce(arguments, schema)  # follows the schema, not the value: any depth is safe
    deep = _too_deep(value)  # after coercion: an argument's JSON text may nest too
    if deep is not None:
        # Nothing else is checked: the record keeps the arguments cut at MAX_DEPTH.
        return _refused(_depth_problem(deep), raw_text, value=json_safe(value))
    validator = _validator_for(json.dumps(schema, sort_keys=True))
    errors = _unrepresentable(value, "")
    try:
        found = sorted(
            validator.iter_errors(value), key=lambda e: (list(e.absolute_path), e.message)
        )
    except Unresolvable as exc:  # a reference stored before they were refused at save
        return _refused(
            _problem(
                "$",
                f"The tool's input schema cannot be used: its reference {exc.ref!r} "
                "does not resolve (references are not fetched). Ask the tool's owner to fix it.",
                "a tool schema without references",
            ),
            raw_text,
            value=json_safe(value),
        )
    for error in found:
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
        return ValidationOutcome(ok=False, value=value, errors=_echoable(errors), raw_text=raw_text)
    return ValidationOutcome(ok=True, value=value, raw_text=raw_text)


def _depth_problem(path: str) -> dict:
    return _problem(
        path,
        f"Arguments may be nested at most {MAX_DEPTH} levels deep.",
        f"at most {MAX_DEPTH} levels of nesting",
    )


def _refused(problem: dict, raw_text: str, value: Any = None) -> ValidationOutcome:
    return ValidationOutcome(ok=False, value=value, errors=_echoable([problem]), raw_text=raw_text)
