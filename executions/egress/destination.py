"""What the guard answers: the checked destination, or why it refused."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


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
