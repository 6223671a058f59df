"""Parsing of query-string filters with errors that name the parameter."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from rest_framework.exceptions import ValidationError

from toolhub.api.serializers import any_case_choice

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}

# The widest integer column of PostgreSQL and SQLite (bigint, 64-bit signed): a
# number beyond it is no id of any row, and sending it to the database fails.
MIN_DB_INTEGER = -(2**63)
MAX_DB_INTEGER = 2**63 - 1
# The largest value of an integer column (PositiveIntegerField): a serializer field stored
# in one documents it as its maximum, so the document never offers a number the row refuses.
MAX_DB_INT = 2**31 - 1
_MAX_ID_DIGITS = len(str(MAX_DB_INTEGER))


def parse_id(raw) -> int | None:
    """A positive integer id written in ASCII digits, at most ``MAX_DB_INTEGER``; else None.

    Unlike ``str.isdecimal`` and ``int``, refuses the digits of other scripts
    (ARABIC-INDIC DIGIT ONE is not 1), signs, spaces and underscores.
    """
    text = str(raw)
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip("0")
    if not digits or len(digits) > _MAX_ID_DIGITS:
        return None
    value = int(digits)
    return value if value <= MAX_DB_INTEGER else None


def db_integer_in_range(value: int) -> bool:
    """Whether ``value`` fits in a bigint column."""
    return MIN_DB_INTEGER <= value <= MAX_DB_INTEGER


def utc_in_range(value: datetime) -> bool:
    """Whether an aware ``value`` still falls in the years 1 to 9999 once converted to UTC.

    The database layer converts every aware date-time to UTC; one just inside
    the calendar with an offset (9999-12-31T23:59-12:00) falls outside it there.
    """
    try:
        value.astimezone(UTC)
    except OverflowError:
        return False
    return True


# Paging parameters every list endpoint takes.
PAGING = ("page", "page_size", "cursor")


def reject_unknown(params, known, *, paging: bool = True) -> None:
    """Refuse query parameters an endpoint does not read, and filters given twice.

    Ignored, a misspelled filter (``?tool=`` for ``?tool_id=``, ``?type=``)
    answers with everything, which reads as "these match"; given twice, one
    value would silently win.
    """
    allowed = [*known, *(PAGING if paging else ())]
    unknown = sorted(name for name in params if name not in allowed)
    if unknown:
        takes = f"this endpoint takes: {', '.join(allowed)}" if allowed else "it takes none"
        raise ValidationError({name: [f"Unknown query parameter; {takes}."] for name in unknown})
    # An empty cursor stands for the first page (a next link's template left blank).
    empty = sorted(name for name in params if params.get(name) == "" and name != "cursor")
    if empty:
        raise ValidationError({name: [EMPTY] for name in empty})
    repeated = sorted(name for name in params if len(params.getlist(name)) > 1)
    if repeated:
        raise ValidationError(
            {
                name: [
                    "Given more than once; give it once"
                    + (" (it takes a comma-separated list)." if name == "status" else ".")
                ]
                for name in repeated
            }
        )


EMPTY = "Empty: give a value, or leave the parameter out."


def _given(params, name: str) -> str | None:
    """The parameter's raw value, None when it is absent; an empty value is a 400.

    Read as "no filter", ``?status=`` would answer with everything, as a
    misspelled name would; and no value is an empty one of the documented type.
    """
    raw = params.get(name)
    if raw == "":
        raise ValidationError({name: [EMPTY]})
    return raw


def query_bool(params, name: str) -> bool | None:
    raw = _given(params, name)
    if raw is None:
        return None
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValidationError({name: [f"'{raw}' is not a boolean; use true or false."]})


def query_choice(params, name: str, choices, *, any_case: bool = False) -> str | None:
    """One of ``choices`` (``any_case``: in any letter case, answered as declared)."""
    raw = _given(params, name)
    if raw is None:
        return None
    allowed = [c for c in choices]
    if any_case:
        raw = any_case_choice(raw, allowed)
    if raw not in allowed:
        raise ValidationError({name: [f"'{raw}' is not one of: {', '.join(allowed)}."]})
    return raw


def query_uuid(params, name: str) -> uuid.UUID | None:
    raw = _given(params, name)
    if raw is None:
        return None
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        raise ValidationError({name: [f"'{raw}' is not a UUID."]}) from None


def query_id(params, name: str, *, what: str = "an id") -> int | None:
    """A positive integer id (see ``parse_id``); a 400 naming ``name`` when it is not one."""
    raw = _given(params, name)
    if raw is None:
        return None
    value = parse_id(raw)
    if value is None:
        raise ValidationError(
            {
                name: [
                    f"'{raw}' is not {what}: use a whole number from 1 to {MAX_DB_INTEGER}, "
                    "in ASCII digits."
                ]
            }
        )
    return value


def query_datetime(
    params, name: str, *, allow_date: bool = False, plus_as_space: bool = False
) -> datetime | None:
    """An ISO 8601 date-time (or, with ``allow_date``, a date: its midnight), made aware in UTC.

    Naive values are taken as UTC; a value that leaves the years 1-9999 once
    converted to UTC is refused (400), since no query can use it. The value is
    returned in UTC whatever its offset.

    ``plus_as_space`` repairs an offset whose '+' arrived as a space because the
    client did not encode the query string.
    """
    raw = _given(params, name)
    if raw is None:
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
    if not utc_in_range(value):
        raise ValidationError(
            {name: [f"'{raw}' is out of range: in UTC it falls outside the years 1 to 9999."]}
        )
    # In UTC: PostgreSQL takes offsets up to 15:59 only, ISO 8601 (and Python) up to 23:59.
    return value.astimezone(UTC)
