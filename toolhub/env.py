"""Typed readers for settings from the environment.

Each helper fails loudly (``ImproperlyConfigured``) on a value it cannot
parse, instead of silently falling back to a default. Every ``NAME`` may also
be given as ``NAME_FILE``: the path of a file holding the value (Docker and
Kubernetes secrets).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}

# Every variable the settings read (and its ``_FILE`` twin): ToolHub's own
# configuration, which nothing stored in the database may ask to be sent anywhere.
SETTINGS_NAMES: set[str] = set()
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    """Return the variable's value, reading ``NAME_FILE`` when that is set."""
    SETTINGS_NAMES.update((name, f"{name}_FILE"))
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    value = os.environ.get(name)
    if value is None:
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = env_str(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = env_str(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = env_str(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value:g} must be at least {minimum:g}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = env_str(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_map(name: str) -> dict[str, str]:
    """``key=value`` pairs separated by commas (``"a=x,b=y"``).

    A malformed entry is named by its position, never quoted: values may hold
    passwords.
    """
    raw = env_str(name)
    if raw is None:
        return {}
    expected = f'expected {name}="name=value,name2=value2"'
    entries = [item.strip() for item in raw.split(",") if item.strip()]
    result: dict[str, str] = {}
    for position, entry in enumerate(entries, start=1):
        key, sep, value = entry.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value or any(c.isspace() for c in key):
            raise ImproperlyConfigured(
                f"{name}: entry {position} of {len(entries)} is not name=value ({expected})"
            )
        if key in result:
            raise ImproperlyConfigured(f"{name}: the name {key!r} is given twice ({expected})")
        result[key] = value
    return result


# --------------------------------------------------------------------------- egress allowlist

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME_ENTRY = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$", re.IGNORECASE | re.ASCII)
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE | re.ASCII)
_ADDRESS_LIKE = re.compile(r"^\[?[0-9a-f.:%]*\]?$", re.IGNORECASE | re.ASCII)
_ALLOW_ACCEPTS = (
    "entries are IP addresses or CIDR networks (10.20.0.0/16, fd12::/64) "
    "or host names (letters, digits, hyphens and dots, e.g. api.internal.example)"
)


def egress_allow_entry(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | str:
    """One ``TOOLHUB_EGRESS_ALLOW`` entry: a network, or a host name (lower case, no final dot).

    Raises ``ValueError`` (saying what is accepted) for anything else, in
    particular for an entry that looks like an address or network but does not
    parse as one: it is never taken for a host name.
    """
    text = entry.strip()
    try:
        return ipaddress.ip_network(text.strip("[]"), strict=False)
    except ValueError:
        pass
    # Like the egress guard (and URL parsers), a name whose last label is numeric
    # is an IPv4 literal, never a host name.
    looks_numeric = bool(_NUMERIC_LABEL.match(text.rstrip(".").rsplit(".", 1)[-1]))
    is_url = "://" in text
    if not is_url and (
        "/" in text
        or looks_numeric
        or (":" in text and (text.count(":") > 1 or _ADDRESS_LIKE.match(text)))
    ):
        raise ValueError(f"{text!r} is not a valid IPv4/IPv6 address or network; {_ALLOW_ACCEPTS}")
    if not _HOST_NAME_ENTRY.match(text) or len(text.rstrip(".")) > 253:
        raise ValueError(
            f"{text!r} is neither an address, a network nor a host name "
            f"(no scheme, port, path or spaces); {_ALLOW_ACCEPTS}"
        )
    return text.lower().rstrip(".")


def env_egress_allow(name: str) -> list[str]:
    """A list of egress allowlist entries, each checked by :func:`egress_allow_entry`."""
    entries = env_list(name)
    for entry in entries:
        try:
            egress_allow_entry(entry)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {exc}") from exc
    return entries
