"""Turning executor outputs (database rows, Python return values) into plain JSON values.

One set of rules, shared by the executors, so a value looks the same whichever
kind of tool produced it:

- ``None``, ``bool``, ``int``, ``str`` stay as they are; finite floats too,
  while ``nan`` / ``inf`` (not valid JSON) become the strings ``"nan"`` / ``"inf"``.
- ``Decimal`` -> ``str`` (a float would lose precision: ``NUMERIC(30, 10)``
  values must round-trip exactly).
- ``datetime`` / ``date`` / ``time`` -> ISO 8601 strings (offset kept when aware).
- ``timedelta`` -> seconds as a float (``total_seconds()``).
- ``UUID`` -> ``str``; ``Enum`` -> its value (converted by these rules).
- ``bytes`` / ``bytearray`` / ``memoryview`` -> base64 (standard alphabet, padded).
- mappings -> ``dict`` with string keys; lists, tuples and sets -> lists
  (sets sorted when their items allow it, so the output is stable).
- dataclass instances -> ``dict`` of their fields.
- anything else -> ``str(value)``. A container that contains itself is cut
  with the marker ``"[circular]"``.
- nesting is kept up to ``MAX_DEPTH`` levels of containers; a container deeper
  than that is cut with the marker ``"[nested too deeply]"`` (no JSON encoder,
  database or client is asked to handle unbounded depth, and converting never
  exhausts the stack whatever it is handed).
- text (values and keys) that a database cannot store is mended: NUL
  characters and unpaired surrogates become U+FFFD (``storable_text``).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from typing import Any

from toolhub.text import is_storable_text

CIRCULAR = "[circular]"
TOO_DEEP = "[nested too deeply]"
# The deepest nesting of containers a stored value keeps (the outermost counts as 1);
# call arguments may be nested at most this deep too (executions/validation/).
MAX_DEPTH = 100


def json_safe(value: Any) -> Any:
    """Return ``value`` converted to ``None``/``bool``/``int``/``float``/``str``/``list``/``dict``."""
    return _convert(value, set(), 0)


def _convert(value: Any, path: set[int], depth: int) -> Any:
    """``value`` converted; ``depth`` is how many containers enclose it."""
    if isinstance(value, Enum):  # before the primitives: IntEnum / StrEnum are int / str
        return _convert(value.value, path, depth)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping | list | tuple | set | frozenset) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        marker = id(value)
        if marker in path:
            return CIRCULAR
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        path.add(marker)
        try:
            return _convert_container(value, path, depth + 1)
        finally:
            path.discard(marker)
    return str(value)


def _convert_container(value: Any, path: set[int], depth: int) -> Any:
    # Plain loops, not comprehensions: one stack frame less per level.
    if isinstance(value, Mapping):
        mapping = {}
        for k, v in value.items():
            mapping[_key(k, path, depth)] = _convert(v, path, depth)
        return mapping
    items = []
    if isinstance(value, set | frozenset | list | tuple):
        for v in value:
            items.append(_convert(v, path, depth))
        if isinstance(value, list | tuple):
            return items
        try:
            return sorted(items)
        except TypeError:  # mixed types: keep iteration order
            return items
    fields = {}
    for f in dataclasses.fields(value):
        fields[f.name] = _convert(getattr(value, f.name), path, depth)
    return fields


def storable_text(text: str) -> str:
    """``text`` with NUL characters and unpaired surrogates replaced by U+FFFD.

    PostgreSQL refuses both in text and JSON columns, and UTF-8 cannot encode a
    lone surrogate: an upstream answer containing them must still be recorded.
    """
    text = str(text)
    if is_storable_text(text):
        return text
    return "".join("\ufffd" if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _key(key: Any, path: set[int], depth: int) -> str:
    if isinstance(key, str) and not isinstance(key, Enum):
        return storable_text(key)
    converted = _convert(key, path, depth)
    if isinstance(converted, str):
        return converted
    if converted is None or isinstance(converted, bool):
        return "null" if converted is None else ("true" if converted else "false")
    return str(converted)
