"""The resources an OAuth token may be issued for (RFC 8707), one per token.

A resource is ToolHub's own origin (a host it serves, ``ALLOWED_HOSTS``) followed by
one of: ``/mcp`` (every tool the person may run), ``/mcp/<toolset>`` (that toolset's)
or ``/api/v1`` (the REST API). A token is accepted only where the request's own origin
and path name its resource exactly: one for ``/mcp/<slug>`` is refused at ``/mcp``,
at another toolset, at the REST API and at another host name of the same server.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

MCP_PATH = re.compile(r"^/mcp(?:/(?P<slug>[-a-zA-Z0-9_]{1,64}))?$")
REST_PATH = "/api/v1"


class ResourceError(ValueError):
    """Why a resource indicator is not one of ToolHub's (the message is shown)."""


def parse(uri: str) -> tuple[str, str | None]:
    """``(kind, toolset slug)`` of a resource, kind ``"mcp"`` or ``"rest"``."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ResourceError(f"The resource '{uri}' is not an absolute http(s) URL.")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ResourceError(f"The resource '{uri}' has a query, fragment or user part.")
    host, _port = split_domain_port(parts.netloc)
    if not host or not validate_host(host, settings.ALLOWED_HOSTS):
        raise ResourceError(f"The resource '{uri}' is not on a host this server answers to.")
    path = parts.path.rstrip("/") or "/"
    if path == REST_PATH:
        return "rest", None
    match = MCP_PATH.match(path)
    if match is None:
        raise ResourceError(
            f"The resource '{uri}' is not one of ToolHub's: use <origin>/mcp, "
            "<origin>/mcp/<toolset> or <origin>/api/v1."
        )
    return "mcp", match["slug"]


def single(resources) -> str:
    """The one resource of a request (RFC 8707), checked, or ``ResourceError``."""
    values = [resources] if isinstance(resources, str) else list(resources or [])
    if len(values) != 1:
        raise ResourceError(
            "Name exactly one resource (RFC 8707 'resource' parameter): the MCP endpoint or "
            "REST API the token is for."
            if not values
            else "Name one resource per token; ask for another token for another resource."
        )
    parse(values[0])
    return normalized(values[0])


def normalized(uri: str) -> str:
    """A resource as compared: no trailing slash."""
    return uri.rstrip("/")
