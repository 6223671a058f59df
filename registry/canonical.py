"""Canonical forms of values for hashing: the same text whether a value is taken
before it is written or read back from the database.

A hash or MAC computed when a record is written is checked later against the
stored row, so every value must hash alike on both sides. PostgreSQL changes
some on the way: jsonb keeps numbers as decimals (``1e16`` comes back as
``10000000000000000``, ``-0.0`` as ``0``), and ``inet`` prints addresses its own
way. These functions give each the one form both sides agree on.
"""

from __future__ import annotations

import ipaddress
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any


def stored_form(value: Any) -> Any:
    """``value`` with every number as its normalized decimal text (as jsonb keeps it)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        return "0" if number == 0 else format(number.normalize(), "f")
    if isinstance(value, dict):
        return {k: stored_form(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stored_form(v) for v in value]
    return value


def address_form(value: Any) -> str | None:
    """An IP address as the hex of its bytes: one form however it was written (and
    whichever Python prints IPv4-mapped addresses which way)."""
    if value in (None, ""):
        return None
    try:
        return ipaddress.ip_address(str(value).split("%", 1)[0]).packed.hex()
    except ValueError:
        return str(value)


def time_form(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return str(value)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
