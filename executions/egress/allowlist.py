"""The operator's exceptions: TOOLHUB_EGRESS_ALLOW networks and host names, read at every call."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

from executions.egress.addresses import _strip_scope, normalize_address
from executions.egress.destination import IPAddress, IPNetwork
from toolhub.env import egress_allow_entry

# --------------------------------------------------------------------------- allowlist


@dataclass(frozen=True)
class _Allowlist:
    networks: tuple[IPNetwork, ...]
    hosts: frozenset[str]


def _normalize_name(host: str) -> str:
    return host.strip().lower().rstrip(".")


@lru_cache(maxsize=32)
def _parse_allowlist(entries: tuple[str, ...]) -> _Allowlist:
    networks: list[IPNetwork] = []
    hosts: set[str] = set()
    for raw in entries:
        if not raw.strip():
            continue
        try:
            entry = egress_allow_entry(raw)
        except ValueError:
            # Refused at startup (settings); an entry set otherwise that is neither a
            # network nor a host name could never match, so it allows nothing.
            continue
        if isinstance(entry, str):
            hosts.add(entry)
        else:
            networks.append(entry)
    return _Allowlist(tuple(networks), frozenset(hosts))


def current_allowlist() -> _Allowlist:
    """The allowlist from ``settings.TOOLHUB_EGRESS_ALLOW``, read at every call."""
    value: Any = getattr(settings, "TOOLHUB_EGRESS_ALLOW", None) or []
    if isinstance(value, str):
        value = value.split(",")
    return _parse_allowlist(tuple(str(v) for v in value))


def _allowed_by_network(ip: IPAddress, allow: _Allowlist) -> bool:
    if not allow.networks:
        return False
    candidates = {_strip_scope(ip), normalize_address(ip)}
    return any(c.version == net.version and c in net for c in candidates for net in allow.networks)
