"""Copying a value into the fields an entry sets, when the entry gives it."""

from __future__ import annotations

from typing import Any

from registry.importers.specs import MISSING


def set_if_given(fields: dict[str, Any], key: str, value: Any) -> None:
    if value is not MISSING:
        fields[key] = value
