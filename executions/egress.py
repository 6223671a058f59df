"""The egress guard: where an executor may open a connection.

Every outgoing connection of the HTTP executor (and any other executor that
talks to a URL) goes through :func:`check_url` / :func:`check_host` first. The
guard is on by default and refuses destinations that are not public internet
addresses: loopback, private (RFC 1918, fc00::/7), link-local, carrier-grade
NAT, multicast, unspecified, reserved/documentation ranges and the cloud
metadata endpoints, including the same addresses written in other forms
(IPv4-mapped IPv6, NAT64, 6to4, and the decimal / octal / hex / shortened IPv4
literals that ``inet_aton`` and some URL parsers accept).

A host name is refused when ANY of the addresses it resolves to is refused: an
attacker controlling a DNS zone can otherwise return one public and one private
address and let the connection pick the private one.

Exceptions are opened only by the ``TOOLHUB_EGRESS_ALLOW`` setting, a list of
strings read at call time:

* CIDR networks or single addresses (``"10.20.0.0/16"``, ``"127.0.0.1/32"``,
  ``"fd12::1"``): a resolved address inside one of them is allowed;
* host names (``"api.internal.example"``): that exact name (case-insensitive,
  trailing dot ignored, no wildcard) is allowed whatever it resolves to.

Any other entry (``toolhub.env.egress_allow_entry``) stops the process at
startup. A refusal that the setting could lift says what to list in it.

The check returns a :class:`Destination` holding the addresses it checked. The
caller must connect to one of *those* addresses (pinning) and never resolve the
name again, otherwise a DNS answer that changes between the check and the
connect (DNS rebinding) would bypass the guard.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from django.conf import settings

from toolhub.env import egress_allow_entry

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Resolutions are cached for a few seconds so that a burst of calls to the same
# upstream costs one getaddrinfo. This is safe: the cache holds what a name
# resolved to, never a decision. The policy (including the current allowlist)
# is applied to the cached addresses on every call, and the connection is
# pinned to the very addresses that were checked, so a DNS answer that changes
# meanwhile can only be picked up later, never slip past the check.
DNS_CACHE_SECONDS = 5.0
_DNS_CACHE_MAX = 1024


class EgressDenied(Exception):
    """The destination is not allowed. The message names the host and the reason."""

    def __init__(self, message: str, *, host: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.host = host
        self.reason = reason


class HostResolutionError(Exception):
    """The host name could not be resolved (a connection problem, not a refusal)."""

    def __init__(self, message: str, *, host: str | None = None):
        super().__init__(message)
        self.host = host


@dataclass(frozen=True)
class Destination:
    """A checked destination: connect to ``addresses`` (in order), never re-resolve ``host``."""

    host: str
    port: int
    addresses: tuple[str, ...]
    allowed_by: (
        str  # "policy" (public addresses), "network" (a CIDR entry) or "host" (a name entry)
    )

    @property
    def address(self) -> str:
        return self.addresses[0]


# --------------------------------------------------------------------------- address policy

_V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("169.254.169.254/32", "a cloud metadata address"),
        ("100.100.100.200/32", "a cloud metadata address"),
        ("168.63.129.16/32", "a cloud platform endpoint (Azure WireServer)"),
        ("192.0.0.192/32", "a cloud metadata address"),
        ("0.0.0.0/32", "the unspecified address"),
        ("0.0.0.0/8", "a 'this network' address (0.0.0.0/8)"),
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private address (RFC 1918)"),
        ("172.16.0.0/12", "a private address (RFC 1918)"),
        ("192.168.0.0/16", "a private address (RFC 1918)"),
        ("100.64.0.0/10", "a carrier-grade NAT address (RFC 6598)"),
        ("169.254.0.0/16", "a link-local address"),
        ("192.0.0.0/24", "a reserved address (IETF protocol assignments)"),
        ("192.0.2.0/24", "a documentation address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("192.88.99.0/24", "a reserved address (6to4 relay anycast)"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)

_V6_RULES: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("fd00:ec2::254/128", "a cloud metadata address"),
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "an IPv4-compatible IPv6 address (deprecated)"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("100::/64", "a discard-only address"),
        ("2001::/32", "a Teredo tunnel address"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique-local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address (deprecated)"),
        ("ff00::/8", "a multicast address"),
    )
)

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")


def _strip_scope(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        return ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    return ip


def normalize_address(ip: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) is the IPv4 address itself."""
    ip = _strip_scope(ip)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def denial_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be reached by default, or ``None`` for a public address."""
    ip = normalize_address(ip)
    if isinstance(ip, ipaddress.IPv4Address):
        for net, reason in _V4_RULES:
            if ip in net:
                return reason
    else:
        embedded = None
        if ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip in _SIXTOFOUR:
            embedded = ip.sixtofour
        if embedded is not None:
            inner = denial_reason(embedded)
            if inner is not None:
                return f"a NAT64/6to4 address embedding {embedded}, {inner}"
        for net, reason in _V6_RULES:
            if ip in net:
                return reason
    # Anything else the standard library does not consider globally reachable.
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


# --------------------------------------------------------------------------- host literals

_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_DECIMAL = re.compile(r"^[1-9][0-9]*$|^0$")
_OCTAL = re.compile(r"^0[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-f]*$")
_HOST_NAME = re.compile(r"^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$")  # ASCII (IDNA-encoded) labels


class _MalformedLiteral(ValueError):
    pass


def _ipv4_part(part: str) -> int:
    if _HEX.match(part):
        return int(part[2:] or "0", 16)
    if _OCTAL.match(part):
        return int(part, 8)
    if _DECIMAL.match(part):
        return int(part, 10)
    raise _MalformedLiteral(part)


def parse_ip_literal(host: str) -> IPAddress | None:
    """Return the address a host string denotes when it is an IP literal, else ``None``.

    Accepts everything ``inet_aton`` and WHATWG URL parsers accept for IPv4
    (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``0x7f.1``, a
    trailing dot) and normalizes it. Like the WHATWG URL standard, a host whose
    last label is numeric is an IPv4 literal or is malformed: it is never
    handed to the resolver (raises ``ValueError``).
    """
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(unquote(text))
        except ValueError as exc:
            raise _MalformedLiteral(host) from exc
    if text.endswith("."):
        text = text[:-1]
    labels = text.split(".")
    if not labels or not _NUMERIC_LABEL.match(labels[-1]):
        return None  # a host name
    if len(labels) > 4:
        raise _MalformedLiteral(host)
    values = [_ipv4_part(label) for label in labels]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        raise _MalformedLiteral(host)
    number = 0
    for v in head:
        number = number * 256 + v
    number = (number << (8 * (5 - len(values)))) + last
    return ipaddress.IPv4Address(number)


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


# --------------------------------------------------------------------------- resolution

_dns_cache: dict[str, tuple[float, tuple[str, ...]]] = {}
_dns_lock = threading.Lock()


def clear_dns_cache() -> None:
    with _dns_lock:
        _dns_cache.clear()


def _resolve(host: str, port: int) -> tuple[str, ...]:
    now = time.monotonic()
    with _dns_lock:
        hit = _dns_cache.get(host)
    if hit is not None and hit[0] > now:
        return hit[1]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise HostResolutionError(f"could not resolve host {host!r}: {exc}", host=host) from exc
    addresses: list[str] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise HostResolutionError(f"could not resolve host {host!r}: no addresses", host=host)
    result = tuple(addresses)
    with _dns_lock:
        if len(_dns_cache) >= _DNS_CACHE_MAX:
            _dns_cache.pop(next(iter(_dns_cache)))
        _dns_cache[host] = (now + DNS_CACHE_SECONDS, result)
    return result


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
        if _allowed_by_network(literal, allow):
            return Destination(host, port, (_connect_form(literal),), "network")
        reason = denial_reason(literal)
        if reason is not None:
            address = normalize_address(literal)
            raise _deny(host, f"{address} is {reason}", allow_as=str(address))
        return Destination(host, port, (_connect_form(literal),), "policy")

    if not _HOST_NAME.match(name):
        raise _deny(host, "invalid host name")
    addresses = _resolve(name, port)
    if name in allow.hosts:
        return Destination(host, port, addresses, "host")

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
