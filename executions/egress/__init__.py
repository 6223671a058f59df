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

The package, one concept a module: ``destination`` (the answer and the errors),
``addresses`` (the address policy and IP literals), ``allowlist``, ``resolution``
(the DNS cache) and ``checks``.
"""

from __future__ import annotations

from executions.egress.addresses import denial_reason, normalize_address, parse_ip_literal
from executions.egress.allowlist import current_allowlist
from executions.egress.checks import ALLOW_SETTING, check_host, check_scheme, check_url
from executions.egress.destination import (
    ALLOWED_SCHEMES,
    DEFAULT_PORTS,
    Destination,
    EgressDenied,
    HostResolutionError,
    IPAddress,
    IPNetwork,
)
from executions.egress.resolution import DNS_CACHE_SECONDS, clear_dns_cache

__all__ = [
    "ALLOWED_SCHEMES",
    "ALLOW_SETTING",
    "DEFAULT_PORTS",
    "DNS_CACHE_SECONDS",
    "Destination",
    "EgressDenied",
    "HostResolutionError",
    "IPAddress",
    "IPNetwork",
    "check_host",
    "check_scheme",
    "check_url",
    "clear_dns_cache",
    "current_allowlist",
    "denial_reason",
    "normalize_address",
    "parse_ip_literal",
]
