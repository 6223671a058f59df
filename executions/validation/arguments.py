"""validate_arguments: parse, coerce, fill defaults and validate a call's arguments."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import ValidationError
from referencing.exceptions import Unresolvable

from executions.jsonsafe import json_safe
from executions.validation.coercion import _coerce, loads_json
from executions.validation.patterns import _validator_for
from executions.validation.problems import (
    ValidationOutcome,
    _depth_problem,
    _echoable,
    _expected,
    _path,
    _problem,
    _refused,
    _too_deep,
    _unrepresentable,
)
from toolhub.strictjson import NotJSONNumber


def validate_arguments(arguments: Any, schema: dict) -> ValidationOutcome:
    """Parse, coerce, fill defaults and validate ``arguments``; never raises for bad input."""
    raw_text = ""
    if isinstance(arguments, str | bytes):
        raw_text = arguments.decode(errors="replace") if isinstance(arguments, bytes) else arguments
        arguments = _parsed(raw_text)
        if isinstance(arguments, ValidationOutcome):
            return arguments
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
        errors.extend(_schema_problems(error))
    if errors:
        return ValidationOutcome(ok=False, value=value, errors=_echoable(errors), raw_text=raw_text)
    return ValidationOutcome(
        ok=True, value=value, raw_text=raw_text, defaulted=defaulted_paths(arguments, value)
    )


def defaulted_paths(sent: dict, applied: dict, prefix: str = "") -> list[str]:
    """The paths of ``applied`` (the coerced arguments) that ``sent`` did not carry, or
    carried as null: filled in from the schema's defaults. Nested objects the caller
    sent are followed; an object that was itself a default counts once."""
    found = []
    for key, value in applied.items():
        path = f"{prefix}{key}"
        given = sent.get(key) if isinstance(sent, dict) else None
        if given is None and value is not None:
            found.append(path)
        elif isinstance(given, dict) and isinstance(value, dict):
            found.extend(defaulted_paths(given, value, f"{path}."))
    return found


def _parsed(raw_text: str) -> Any:
    """The arguments JSON text read (empty: no arguments), or the outcome refusing it."""
    if raw_text.strip() == "":
        return {}
    try:
        return loads_json(raw_text)
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


def _schema_problems(error: ValidationError) -> list[dict]:
    """One schema error as problems: an unknown argument each, a missing one by name."""
    path = _path(error)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return [
            {
                "path": f"{path}.{key}" if path != "$" else key,
                "message": f"Unknown argument '{key}'.",
                "expected": _expected(error),
            }
            for key in extra
        ]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        field_path = f"{path}.{missing}" if path != "$" else missing
        return [
            {
                "path": field_path or path,
                "message": f"Missing required argument '{missing}'.",
                "expected": _expected(error),
            }
        ]
    return [{"path": path, "message": error.message, "expected": _expected(error)}]
