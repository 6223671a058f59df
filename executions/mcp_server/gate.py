"""The ASGI app at ``/mcp`` and ``/mcp/<toolset>``: every check before the SDK sees a request.

In order: the Host and ``Origin`` (DNS rebinding: no Origin, or one of ALLOWED_HOSTS
or ``TOOLHUB_MCP_ALLOWED_ORIGINS``; else 403), the method, the agent token (401 with
``WWW-Authenticate: Bearer resource_metadata=…``, RFC 9728), the toolset (404), the
body (at most ``TOOLHUB_MCP_MAX_BODY_BYTES``, 413; whole within
``TOOLHUB_MCP_BODY_TIMEOUT``, 408), the 2025 session (404 when unknown or another
token's). Then the request goes to the SDK with the ``McpRequest`` in its scope.

The token authenticates the caller to ToolHub only: nothing forwards it upstream
(an MCP tool's server gets the credentials its ToolHub config holds).
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from rest_framework.exceptions import AuthenticationFailed

from executions.mcp_server import calls, server, sessions
from registry import selectors
from registry.authentication import BearerTokenAuthentication
from toolhub import context
from toolhub.db.pool import DatabaseUnavailable

logger = logging.getLogger(__name__)
METADATA_PATH = "/.well-known/oauth-protected-resource"
_TOOLSET_PATH = re.compile(r"^/mcp(?:/(?P<slug>[-a-zA-Z0-9_]{1,64}))?/?$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")
_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_PROTOCOL = "io.modelcontextprotocol/protocolVersion"


class Refused(Exception):
    """Answer the request with ``status`` and a JSON body; nothing else runs."""

    def __init__(self, status: int, body: dict, headers: dict | None = None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _headers(scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


async def _respond(send, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    head += [(k.lower().encode(), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


def _allowed_hosts() -> list[str]:
    if settings.ALLOWED_HOSTS:
        return list(settings.ALLOWED_HOSTS)
    return [".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []


def check_host_and_origin(headers: dict[str, str]) -> None:
    host, _ = split_domain_port(headers.get("host", ""))
    if not host or not validate_host(host, _allowed_hosts()):
        raise Refused(400, {"error": "bad_host", "message": "Host not allowed (ALLOWED_HOSTS)."})
    origin = headers.get("origin")
    if origin is None:
        return  # not a browser: DNS rebinding needs one
    allowed = [o.rstrip("/") for o in settings.TOOLHUB_MCP_ALLOWED_ORIGINS]
    hostname = urlsplit(origin).hostname if origin != "null" else None
    # ALLOWED_HOSTS' "*" admits any Host, never any page: origins must be named.
    named_hosts = [h for h in _allowed_hosts() if h != "*"]
    if origin.rstrip("/") in allowed or (hostname and validate_host(hostname.lower(), named_hosts)):
        return
    raise Refused(
        403,
        {
            "error": "origin_not_allowed",
            "message": "Origin not allowed: add it to TOOLHUB_MCP_ALLOWED_ORIGINS.",
        },
    )


def base_url(scope, headers) -> str:
    return f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}"


def unauthorized(scope, headers, message: str, *, presented: bool) -> Refused:
    metadata = base_url(scope, headers) + METADATA_PATH + scope["path"].rstrip("/")
    challenge = f'Bearer resource_metadata="{metadata}"'
    if presented:
        description = message.replace('"', "'")
        challenge = (
            f'Bearer error="invalid_token", error_description="{description}", '
            f'resource_metadata="{metadata}"'
        )
    error = "invalid_token" if presented else "unauthorized"
    return Refused(
        401, {"error": error, "error_description": message}, {"WWW-Authenticate": challenge}
    )


def authenticate(raw: str):
    return BearerTokenAuthentication().authenticate_token(raw)


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


class Gate:
    """The MCP endpoint as an ASGI app (``lifespan`` runs the SDK's session manager)."""

    def __init__(self):
        self.manager = None

    @asynccontextmanager
    async def lifespan(self):
        manager = server.build_manager()
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        incoming = headers.get("x-request-id", "")
        request_id = incoming if _SAFE_ID.match(incoming) else context.new_request_id()

        started = False

        async def send_with_id(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (b"x-request-id", request_id.encode()),
                    ],
                }
            await send(message)

        try:
            await self.serve(scope, receive, send_with_id, headers, request_id)
        except Refused as refused:
            await _respond(send_with_id, refused.status, refused.body, refused.headers)
        except DatabaseUnavailable as exc:
            # Before the SDK (the token, the toolset, the session): 503, never a 500.
            # A stream already answering ends here; its client reconnects.
            if not started:
                body = {"error": exc.code, "message": exc.message}
                await _respond(send_with_id, exc.status_code, body, exc.headers)

    async def serve(self, scope, receive, send, headers, request_id):
        check_host_and_origin(headers)
        path = scope["path"]
        if path.startswith(METADATA_PATH):
            await self.resource_metadata(scope, send, headers, path[len(METADATA_PATH) :])
            return
        match = _TOOLSET_PATH.match(path)
        if match is None:
            raise Refused(404, {"error": "not_found", "message": "No such MCP endpoint."})
        if self.manager is None:
            raise Refused(503, {"error": "not_started", "message": "ASGI lifespan not run."})
        if scope["method"] not in ("POST", "GET", "DELETE"):
            raise Refused(405, {"error": "method_not_allowed"}, {"Allow": "GET, POST, DELETE"})
        request = await self.authenticated(scope, headers, request_id, match["slug"])
        body = b""
        if scope["method"] == "POST":
            length = headers.get("content-length", "")
            limit = settings.TOOLHUB_MCP_MAX_BODY_BYTES
            if length.isdigit() and int(length) > limit:
                raise Refused(413, {"error": "too_large", "message": f"Body over {limit} bytes."})
            body = await read_body(receive, limit, settings.TOOLHUB_MCP_BODY_TIMEOUT)
        await self.with_session(request, headers)
        if scope["method"] == "DELETE":
            if request.session is None:
                raise Refused(405, {"error": "no_session"}, {"Allow": "GET, POST"})
            await calls.in_thread(sessions.session_close, request.session.id, request.token_hash)
            await _respond(send, 200, {})
            return
        if scope["method"] == "GET":
            await self.list_changes(scope, receive, send, request, headers)
            return
        message = parsed(body)
        send = await self.before_sdk(message, request, headers, send)
        await self.manager.handle_request(
            {**scope, server.SCOPE_KEY: request}, replay(body, receive), send
        )

    async def authenticated(self, scope, headers, request_id, toolset) -> sessions.McpRequest:
        scheme, _, raw = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise unauthorized(scope, headers, "An agent token is required.", presented=False)
        try:
            user, credentials = await calls.in_thread(authenticate, raw.strip())
        except AuthenticationFailed as exc:
            raise unauthorized(scope, headers, str(exc.detail), presented=True) from None
        if toolset is not None and await calls.in_thread(selectors.toolset_active, toolset) is None:
            raise Refused(404, {"error": "not_found", "message": "No such toolset."})
        client = scope.get("client")
        return sessions.McpRequest(
            user=user,
            registry=credentials.registry,
            token_hash=credentials.token.token_hash,
            request_id=request_id,
            client_address=client[0] if client else None,
            base_url=base_url(scope, headers),
            toolset=toolset,
        )

    async def with_session(self, request: sessions.McpRequest, headers) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return
        found = await calls.in_thread(sessions.session_find, session_id[:64], request.token_hash)
        if found is None:  # the client starts a new session (the spec's answer: 404)
            raise Refused(
                404,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
            )
        request.session = found

    async def before_sdk(self, message: dict, request: sessions.McpRequest, headers, send):
        """What the body says about the client; a 2025 ``initialize`` opens a session."""
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        info = meta.get(_CLIENT_INFO)
        if isinstance(info, dict):  # 2026-07-28: every request names its client
            request.client_name = str(info.get("name", ""))[:200]
            request.client_version = str(info.get("version", ""))[:100]
        if isinstance(meta.get(_PROTOCOL), str):
            request.protocol_version = meta[_PROTOCOL][:20]
        method = message.get("method")
        if method == "notifications/cancelled":
            await calls.in_thread(cancel_by_rpc, request, params.get("requestId"))
        if method != "initialize" or request.session is not None:
            return send
        return await self.open_session(params, request, send)

    async def open_session(self, params: dict, request: sessions.McpRequest, send):
        info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        asked = params.get("protocolVersion")
        session = await calls.in_thread(
            lambda: sessions.session_open(
                token_hash=request.token_hash,
                client_name=str(info.get("name", "")),
                client_version=str(info.get("version", "")),
                protocol_version=asked
                if asked in HANDSHAKE_PROTOCOL_VERSIONS
                else LATEST_HANDSHAKE_VERSION,
            )
        )

        async def send_with_session(message):
            if message["type"] == "http.response.start" and message["status"] == 200:
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (b"mcp-session-id", session.id.encode()),
                    ],
                }
            await send(message)

        return send_with_session

    async def resource_metadata(self, scope, send, headers, resource_path: str) -> None:
        """RFC 9728 protected-resource metadata: the token goes in the header."""
        base = base_url(scope, headers)
        await _respond(
            send,
            200,
            {
                "resource": base + (resource_path or "/mcp"),
                "bearer_methods_supported": ["header"],
                "resource_name": "ToolHub",
                "resource_documentation": base + "/docs/mcp-server",
            },
        )

    async def list_changes(self, scope, receive, send, request: sessions.McpRequest, headers):
        """A 2025 session's GET stream: ``notifications/tools/list_changed`` when the
        caller's list changes (grants, tools, toolsets), computed on any process."""
        if request.session is None:
            raise Refused(405, {"error": "no_session"}, {"Allow": "POST"})
        if "text/event-stream" not in headers.get("accept", ""):
            raise Refused(406, {"error": "not_acceptable", "message": "Accept text/event-stream."})
        head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        notice = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

        async def watch():
            async for changed in server.list_changes(request):
                chunk = f"event: message\ndata: {notice}\n\n" if changed else ": ping\n\n"
                await send(
                    {"type": "http.response.body", "body": chunk.encode(), "more_body": True}
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            while (await receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()


def cancel_by_rpc(request: sessions.McpRequest, rpc_id) -> None:
    """A ``notifications/cancelled`` for a call this or another process admitted."""
    if rpc_id is None:
        return
    execution_id = sessions.call_find(request, rpc_id)
    if execution_id is not None:
        calls.cancel(request, execution_id)


application = Gate()
