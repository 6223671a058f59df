"""The checks executors call: check_host, check_scheme, check_url."""

from __future__ import annotations

import ipaddress
from typing import Any

from executions.egress import resolution
from executions.egress.addresses import (
    _HOST_NAME,
    denial_reason,
    normalize_address,
    parse_ip_literal,
)
from executions.egress.allowlist import (
    _allowed_by_network,
    _Allowlist,
    _normalize_name,
    current_allowlist,
)
from executions.egress.destination import (
    ALLOWED_SCHEMES,
    DEFAULT_PORTS,
    Destination,
    EgressDenied,
    IPAddress,
)

# --------------------------------------------------------------------------- checks


ALLOW_SETTING = "TOOLHUB_EGRESS_ALLOW"


def _deny(host: str, reason: str, *, allow_as: str | None = None) -> EgressDenied:
    """The refusal; ``allow_as`` (what the operator may list to allow it) adds a hint."""
    message = f"egress to {host!r} refused: {reason}"
    if allow_as:
        message += f" (to allow it, list {allow_as} in the {ALLOW_SETTING} environment variable)"
    return EgressDenied(message, host=host, reason=reason)


def _connect_form(ip: IPAddress) -> str:
    """The string a socket should connect to for a checked address."""
    return str(normalize_address(ip)) if not getattr(ip, "scope_id", None) else str(ip)


def check_host(host: str, port: int) -> Destination:
    """Check a host (name or IP literal) and port; return the addresses to connect to.

    Raises :class:`EgressDenied` when the destination is refused and
    :class:`HostResolutionError` when a name does not resolve.
    """
    if not isinstance(port, int) or not 0 < port < 65536:
        raise _deny(str(host), f"invalid port {port!r}")
    name = _normalize_name(host or "").strip("[]")
    if not name:
        raise _deny(str(host), "no host")
    allow = current_allowlist()

    try:
        literal = parse_ip_literal(host)
    except ValueError:
        raise _deny(host, "malformed IP address literal") from None
    if literal is not None:
        return _check_literal(host, port, literal, allow)

    if not _HOST_NAME.match(name):
        raise _deny(host, "invalid host name")
    addresses = resolution._resolve(name, port)
    if name in allow.hosts:
        return Destination(host, port, addresses, "host")
    return _check_resolved(host, name, port, addresses, allow)


def _check_literal(host: str, port: int, literal: IPAddress, allow: _Allowlist) -> Destination:
    if _allowed_by_network(literal, allow):
        return Destination(host, port, (_connect_form(literal),), "network")
    reason = denial_reason(literal)
    if reason is not None:
        address = normalize_address(literal)
        raise _deny(host, f"{address} is {reason}", allow_as=str(address))
    return Destination(host, port, (_connect_form(literal),), "policy")


def _check_resolved(
    host: str, name: str, port: int, addresses: tuple[str, ...], allow: _Allowlist
) -> Destination:
    """Every address a name resolves to must be allowed: one refused one refuses the name."""
    allowed_by = "policy"
    checked: list[str] = []
    for address in addresses:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            raise _deny(host, f"it resolved to an unparsable address {address!r}") from None
        if _allowed_by_network(ip, allow):
            allowed_by = "network"
        else:
            reason = denial_reason(ip)
            if reason is not None:
                address = normalize_address(ip)
                raise _deny(
                    host, f"it resolves to {address}, {reason}", allow_as=f"{name} or {address}"
                )
        checked.append(_connect_form(ip))
    return Destination(host, port, tuple(checked), allowed_by)


def check_scheme(scheme: str, host: str = "") -> None:
    if scheme.lower() not in ALLOWED_SCHEMES:
        raise EgressDenied(
            f"egress to {host!r} refused: scheme {scheme!r} is not allowed (only http and https)",
            host=host,
            reason="scheme",
        )


def check_url(url: Any) -> Destination:
    """Check a URL (string or ``httpx.URL``): scheme, host and port.

    The URL is parsed with httpx, the same parser the HTTP executor sends
    with, so the guard and the connection never disagree about the host.
    """
    import httpx

    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url))
    except httpx.InvalidURL as exc:
        raise EgressDenied(f"egress refused: invalid URL ({exc})", reason="invalid URL") from None
    host = parsed.raw_host.decode("ascii", "replace")
    check_scheme(parsed.scheme, host)
    if not host:
        raise _deny(str(url), "the URL has no host")
    port = parsed.port or DEFAULT_PORTS[parsed.scheme.lower()]
    return check_host(host, port)
