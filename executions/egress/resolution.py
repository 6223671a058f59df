"""Host names resolved once, the answers cached for a few seconds (never a decision)."""

from __future__ import annotations

import socket
import threading
import time

from executions.egress.destination import HostResolutionError

# Resolutions are cached for a few seconds so that a burst of calls to the same
# upstream costs one getaddrinfo. This is safe: the cache holds what a name
# resolved to, never a decision. The policy (including the current allowlist)
# is applied to the cached addresses on every call, and the connection is
# pinned to the very addresses that were checked, so a DNS answer that changes
# meanwhile can only be picked up later, never slip past the check.
DNS_CACHE_SECONDS = 5.0
_DNS_CACHE_MAX = 1024

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
