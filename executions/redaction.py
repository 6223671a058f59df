"""Removing secret values from text and structures before anything is stored or logged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
_MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words


def _usable(secrets: Iterable[str]) -> list[str]:
    values = {str(s) for s in secrets if s is not None and len(str(s)) >= _MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)  # longest first: no partial leftovers


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in _usable(secrets):
        text = text.replace(secret, REDACTED)
    return text


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """Return ``value`` with every secret string replaced, recursively."""
    usable = _usable(secrets)
    if not usable:
        return value
    return _redact(value, usable)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_redact(k, secrets): _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact(v, secrets) for v in value]
    return value
