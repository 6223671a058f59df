"""Parsing of query-string filters with errors that name the parameter."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
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


def query_uuid(params, name: str) -> uuid.UUID | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        raise ValidationError({name: [f"'{raw}' is not a UUID."]}) from None


def query_datetime(
    params, name: str, *, allow_date: bool = False, plus_as_space: bool = False
) -> datetime | None:
    """An ISO 8601 date-time (or, with ``allow_date``, a date: its midnight), made aware in UTC.

    ``plus_as_space`` repairs an offset whose '+' arrived as a space because the
    client did not encode the query string.
    """
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if plus_as_space and "T" in text:
        text = text.replace(" ", "+")
    expected = "an ISO 8601 date or date-time" if allow_date else "an ISO 8601 date-time"
    try:
        value = parse_datetime(text)
        if value is None and allow_date:
            day = parse_date(text)
            value = datetime(day.year, day.month, day.day) if day else None
    except ValueError:  # well-formed but impossible, e.g. month 13
        value = None
    if value is None:
        raise ValidationError({name: [f"'{raw}' is not {expected}."]})
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value
