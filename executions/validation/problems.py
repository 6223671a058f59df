"""Each problem as {path, message, expected}, made storable; what no JSON record can hold."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from executions.jsonsafe import MAX_DEPTH, is_storable_text, storable_text
from executions.validation.coercion import _not_finite, _number_name
from toolhub import strictjson


@dataclass
class ValidationOutcome:
    ok: bool
    value: Any = None
    errors: list[dict] = field(default_factory=list)
    raw_text: str = ""
    # Paths of the arguments the caller left out that the schema's defaults filled in
    # ("limit", "options.page"): the record keeps what was sent apart from what was applied.
    defaulted: list[str] = field(default_factory=list)


# Arguments given as JSON text are read as JSON proper (no NaN, Infinity or 1e999).
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
def _depth_problem(path: str) -> dict:
    return _problem(
        path,
        f"Arguments may be nested at most {MAX_DEPTH} levels deep.",
        f"at most {MAX_DEPTH} levels of nesting",
    )


def _refused(problem: dict, raw_text: str, value: Any = None) -> ValidationOutcome:
    return ValidationOutcome(ok=False, value=value, errors=_echoable([problem]), raw_text=raw_text)
