"""Parsing of query-string filters with errors that name the parameter."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def query_bool(params, name: str) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValidationError({name: [f"'{raw}' is not a boolean; use true or false."]})


def query_choice(params, name: str, choices) -> str | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    allowed = [c for c in choices]
    if raw not in allowed:
        raise ValidationError({name: [f"'{raw}' is not one of: {', '.join(allowed)}."]})
    return raw
