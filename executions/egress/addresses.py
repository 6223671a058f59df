"""Which addresses are public, and the many ways an IP address can be written."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

from executions.egress.destination import IPAddress

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
    reason = _v4_reason(ip) if isinstance(ip, ipaddress.IPv4Address) else _v6_reason(ip)
    if reason is not None:
        return reason
    # Anything else the standard library does not consider globally reachable.
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a public address"
    return None


def _v4_reason(ip: ipaddress.IPv4Address) -> str | None:
    return next((reason for net, reason in _V4_RULES if ip in net), None)


def _v6_reason(ip: ipaddress.IPv6Address) -> str | None:
    """The IPv6 ranges, and an IPv4 address embedded by NAT64 or 6to4."""
    embedded = None
    if ip in _NAT64:
        embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    elif ip in _SIXTOFOUR:
        embedded = ip.sixtofour
    if embedded is not None:
        inner = denial_reason(embedded)
        if inner is not None:
            return f"a NAT64/6to4 address embedding {embedded}, {inner}"
    return next((reason for net, reason in _V6_RULES if ip in net), None)


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
