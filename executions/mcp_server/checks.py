"""What the gate checks of an HTTP request before it reads a token, and how it refuses.

The headers that say who and where (``Authorization``, ``Host``, ``Origin``, the
session's) once each; the Host in ``ALLOWED_HOSTS``; a browser's ``Origin`` the
request's own origin or one of ``TOOLHUB_MCP_ALLOWED_ORIGINS``, compared as whole
origins (scheme, host and port); the body's size and pace.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.http.request import split_domain_port, validate_host

# Headers a request may carry once: with two, which one counts would depend on the
# component reading them (the REST API refuses two Authorization headers too).
SINGLE_HEADERS = ("authorization", "host", "origin", "mcp-session-id", "mcp-protocol-version")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """Answer the request with ``status`` and a JSON body; nothing else runs."""

    def __init__(self, status: int, body: dict, headers: dict | None = None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def headers_of(scope) -> dict[str, str]:
    """The request's headers by lower-case name (``check_single_headers`` ran first)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


async def respond(send, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    head += [(k.lower().encode(), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


def check_single_headers(scope) -> None:
    names = [name.decode("latin-1").lower() for name, _ in scope.get("headers", [])]
    for name in SINGLE_HEADERS:
        if (count := names.count(name)) > 1:
            shown = "-".join(part.capitalize() for part in name.split("-"))
            raise Refused(
                400,
                {
                    "error": "duplicate_header",
                    "message": f"Send one {shown} header: this request has {count}.",
                },
            )


def _allowed_hosts() -> list[str]:
    if settings.ALLOWED_HOSTS:
        return list(settings.ALLOWED_HOSTS)
    return [".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []


def origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) origin or URL, the port filled in; else None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def check_host_and_origin(headers: dict[str, str], scheme: str) -> None:
    """The Host must be allowed; a browser's Origin must be this very origin (its Host
    named in ``ALLOWED_HOSTS``, whose ``*`` names no page) or a listed one."""
    host, _ = split_domain_port(headers.get("host", ""))
    if not host or not validate_host(host, _allowed_hosts()):
        raise Refused(400, {"error": "bad_host", "message": "Host not allowed (ALLOWED_HOSTS)."})
    origin = headers.get("origin")
    if origin is None:
        return  # not a browser: DNS rebinding needs one
    seen = origin_of(origin) if origin != "null" else None
    listed = {origin_of(entry) for entry in settings.TOOLHUB_MCP_ALLOWED_ORIGINS}
    named_hosts = [h for h in _allowed_hosts() if h != "*"]
    own = origin_of(f"{scheme}://{headers['host']}") if validate_host(host, named_hosts) else None
    if seen is not None and (seen in listed or seen == own):
        return
    raise Refused(
        403,
        {
            "error": "origin_not_allowed",
            "message": "Origin not allowed: add it (scheme, host and port) to "
            "TOOLHUB_MCP_ALLOWED_ORIGINS.",
        },
    )


def base_url(scope, headers) -> str:
    return f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}"


async def read_body(receive, limit: int, timeout: float) -> bytes:
    chunks, size = [], 0
    try:
        with anyio.fail_after(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise Refused(400, {"error": "disconnected"})
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise Refused(
                        413, {"error": "too_large", "message": f"Body over {limit} bytes."}
                    )
                chunks.append(chunk)
                if not message.get("more_body"):
                    return b"".join(chunks)
    except TimeoutError:
        raise Refused(408, {"error": "timeout", "message": "Body not received in time."}) from None


def replay(body: bytes, receive):
    """A ``receive`` that gives the body read already, then the client's own messages."""
    given = False

    async def again():
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def parsed(body: bytes) -> dict:
    try:
        message = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return {}  # the SDK answers the parse error
    return message if isinstance(message, dict) else {}
