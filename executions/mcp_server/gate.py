"""The ASGI app at ``/mcp`` and ``/mcp/<toolset>``: every check before the SDK sees a request.

In order (``checks``): one each of the headers that say who and where (400), the
Host and ``Origin`` (DNS rebinding: no Origin, this very origin, or one of
``TOOLHUB_MCP_ALLOWED_ORIGINS``; else 403), the method, the agent token (401 with
``WWW-Authenticate: Bearer resource_metadata=…``, RFC 9728), the toolset (404), the
body (at most ``TOOLHUB_MCP_MAX_BODY_BYTES``, 413; whole within
``TOOLHUB_MCP_BODY_TIMEOUT``, 408), the 2025 session (404 when unknown or another
token's), a place for a listen stream (429, ``streams``). Then the request goes to
the SDK with the ``McpRequest`` in its scope.

The token authenticates the caller to ToolHub only: nothing forwards it upstream
(an MCP tool's server gets the credentials its ToolHub config holds).
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import asynccontextmanager

import anyio
from django.conf import settings
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    NAME_BEARING_METHODS,
    decode_header_value,
)
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from rest_framework.exceptions import AuthenticationFailed

from executions.mcp_server import calls, server, sessions, streams, tasks
from executions.mcp_server.checks import (
    Refused,
    base_url,
    check_host_and_origin,
    check_single_headers,
    headers_of,
    parsed,
    read_body,
    replay,
    respond,
)
from registry import selectors
from registry.authentication import BearerTokenAuthentication
from toolhub import context, tracing
from toolhub.db.pool import DatabaseUnavailable

logger = logging.getLogger(__name__)
METADATA_PATH = "/.well-known/oauth-protected-resource"
_TOOLSET_PATH = re.compile(r"^/mcp(?:/(?P<slug>[-a-zA-Z0-9_]{1,64}))?/?$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")
_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_PROTOCOL = "io.modelcontextprotocol/protocolVersion"
_LISTEN = "subscriptions/listen"


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


def _again(raw: str):
    """Authenticates ``raw`` again when called (a closure: its repr does not show it)."""

    def recheck():
        return authenticate(raw)

    return recheck


def lookups(raw: str, toolset: str | None, session_id: str | None):
    """What the gate reads before the body, in one worker-thread step (each step costs a
    thread hand-off and a connection borrow): the token's user and credentials, whether
    the toolset is active, and the 2025 session the request names (None: unknown, or
    another token's). Raises ``AuthenticationFailed``."""
    user, credentials = authenticate(raw)
    holder = (credentials.delegation or credentials.token).token_hash
    if toolset is not None and selectors.toolset_active(toolset) is None:
        return user, credentials, False, None
    if session_id is None:
        return user, credentials, True, None
    return user, credentials, True, sessions.session_find(session_id[:64], holder)


# What an OAuth token's scopes must hold for a method (registry.oauth: the person's rights
# narrowed to what they consented to); methods not listed need no scope.
_SCOPE_OF_METHOD = {
    "tools/list": "tools:read",
    "tools/call": "tools:call",
    # A task is a call: reading its result or cancelling it is the REST API's tools:call.
    "tasks/get": "tools:call",
    "tasks/result": "tools:call",
    "tasks/cancel": "tools:call",
}


def insufficient_scope(scope, headers, message: dict, needed: str) -> Refused:
    """403 naming the scope (RFC 6750 §3.1), so the client can ask the person for it."""
    metadata = base_url(scope, headers) + METADATA_PATH + scope["path"].rstrip("/")
    challenge = (
        f'Bearer error="insufficient_scope", scope="{needed}", resource_metadata="{metadata}"'
    )
    error = {
        "code": -32001,
        "message": f"This client was not given '{needed}' by the person it acts for.",
        "data": {"scope": needed},
    }
    return Refused(
        403,
        {"jsonrpc": "2.0", "id": message.get("id"), "error": error},
        {"WWW-Authenticate": challenge},
    )


def too_many_streams(full: streams.Full, message: dict | None) -> Refused:
    """429 naming the setting: as JSON-RPC for a ``subscriptions/listen`` POST (what the
    SDK client shows), as ToolHub's error body for a GET stream."""
    retry = {"Retry-After": str(settings.TOOLHUB_MCP_LISTEN_LEASE_SECONDS)}
    data = {"setting": full.setting, "limit": full.limit}
    if message is None:
        return Refused(429, {"error": "too_many_streams", "message": str(full), **data}, retry)
    error = {"code": -32000, "message": str(full), "data": data}
    return Refused(429, {"jsonrpc": "2.0", "id": message.get("id"), "error": error}, retry)


def header_mismatch(message: dict, headers) -> Refused | None:
    """400 ``HeaderMismatch`` when ``Mcp-Method`` or ``Mcp-Name`` says other than the body,
    at any revision: a proxy deciding by the headers must see what ToolHub then does."""
    method = message.get("method")
    said = headers.get(MCP_METHOD_HEADER)
    problem = None
    if said is not None and said != method:
        problem = "Mcp-Method header does not match the request body's method"
    name_key = NAME_BEARING_METHODS.get(method) if isinstance(method, str) else None
    named = headers.get(MCP_NAME_HEADER)
    if problem is None and name_key is not None and named is not None:
        if decode_header_value(named) != params_of(message).get(name_key):
            problem = f"Mcp-Name header does not match the request body's {name_key!r} parameter"
    if problem is None:
        return None
    error = {"code": HEADER_MISMATCH, "message": problem}
    return Refused(400, {"jsonrpc": "2.0", "id": message.get("id"), "error": error})


def params_of(message: dict) -> dict:
    """A JSON-RPC message's ``params`` ({} when it has none, or they are not an object)."""
    params = message.get("params")
    return params if isinstance(params, dict) else {}


def meta_of(message: dict) -> dict:
    """A JSON-RPC message's ``params._meta`` (its client, revision, trace context)."""
    meta = params_of(message).get("_meta")
    return meta if isinstance(meta, dict) else {}


def span_of(http_method: str, message: dict, request_id: str) -> tuple[str, dict]:
    """The server span's name and attributes for an MCP request: the JSON-RPC method and
    the tool it calls, never arguments (nor a resource's URI, which may carry some)."""
    if http_method != "POST":
        what = "listen" if http_method == "GET" else "session end"
        return f"MCP {what}", {"http.request.method": http_method, "toolhub.request_id": request_id}
    method = message.get("method")
    method = method if isinstance(method, str) else ""
    target = params_of(message).get("name") if method == "tools/call" else ""
    target = target if isinstance(target, str) else ""
    attributes = {
        "http.request.method": http_method,
        "mcp.method.name": method,
        "jsonrpc.request.id": str(message.get("id", "")),
        "gen_ai.tool.name": target,
        "toolhub.request_id": request_id,
    }
    return (f"{method} {target}".strip() or "MCP"), attributes


def initialize_answer(body: bytes) -> dict | None:
    """The JSON-RPC answer in an ``initialize`` response body (JSON or SSE), if whole."""
    found = parsed(body)
    if found:
        return found
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            found = parsed(line[5:].strip().encode())
            if "result" in found or "error" in found:
                return found
    return None


class Gate:
    """The MCP endpoint as an ASGI app (``lifespan`` runs the SDK's session manager and
    the listen streams' watcher)."""

    def __init__(self):
        self.manager = None
        self.watcher: streams.Watcher | None = None

    @asynccontextmanager
    async def lifespan(self):
        manager = server.build_manager()
        async with manager.run(), anyio.create_task_group() as tg:
            self.manager, self.watcher = manager, streams.Watcher()
            tg.start_soon(self.watcher.run)
            try:
                yield
            finally:
                self.manager = self.watcher = None
                tg.cancel_scope.cancel()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        headers = headers_of(scope)
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
            await respond(send_with_id, refused.status, refused.body, refused.headers)
        except DatabaseUnavailable as exc:
            # Before the SDK (the token, the toolset, the session): 503, never a 500.
            # A stream already answering ends here; its client reconnects.
            if not started:
                body = {"error": exc.code, "message": exc.message}
                await respond(send_with_id, exc.status_code, body, exc.headers)

    async def serve(self, scope, receive, send, headers, request_id):
        check_single_headers(scope)
        check_host_and_origin(headers, scope.get("scheme", "http"))
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
        request, found = await self.authenticated(scope, headers, request_id, match["slug"])
        body = b""
        if scope["method"] == "POST":
            length = headers.get("content-length", "")
            limit = settings.TOOLHUB_MCP_MAX_BODY_BYTES
            if length.isdigit() and int(length) > limit:
                raise Refused(413, {"error": "too_large", "message": f"Body over {limit} bytes."})
            body = await read_body(receive, limit, settings.TOOLHUB_MCP_BODY_TIMEOUT)
        self.with_session(request, headers, found)
        message = parsed(body) if scope["method"] == "POST" else {}
        name, attributes = span_of(scope["method"], message, request_id)
        with tracing.server_span(name, (meta_of(message), headers), attributes):
            request.trace_context = tracing.current_context()
            await self.dispatch(scope, receive, send, headers, request, message, body)

    async def dispatch(self, scope, receive, send, headers, request, message: dict, body: bytes):
        """The authenticated request: a session closed (DELETE), a 2025 GET stream, or a
        JSON-RPC message for the SDK."""
        if scope["method"] == "DELETE":
            if request.session is None:
                raise Refused(405, {"error": "no_session"}, {"Allow": "GET, POST"})
            await calls.in_thread(sessions.session_close, request.session.id, request.token_hash)
            await respond(send, 200, {})
            return
        if scope["method"] == "GET":
            await self.list_changes(scope, receive, send, request, headers)
            return
        method = message.get("method")
        needed = _SCOPE_OF_METHOD.get(method) if isinstance(method, str) else None
        if request.delegation is not None and needed and not request.delegation.allows(needed):
            raise insufficient_scope(scope, headers, message, needed)
        send = await self.before_sdk(message, request, headers, send)
        if tasks.is_task_call(message, request, headers):  # the SDK has no 2025-11-25 tasks
            await respond(send, 200, await tasks.create(request, message))
            return
        scope = {**scope, server.SCOPE_KEY: request}
        if message.get("method") != _LISTEN:
            await self.manager.handle_request(scope, replay(body, receive), send)
            return
        async with self.stream_place(request, message):
            await self.manager.handle_request(scope, replay(body, receive), send)

    @asynccontextmanager
    async def stream_place(self, request: sessions.McpRequest, message: dict | None):
        """A place for one more listen stream of the caller (429 naming the setting when
        there is none), held until the stream ends."""
        try:
            async with self.watcher.opened(request) as stream:
                request.stream = stream
                yield stream
        except streams.Full as full:
            raise too_many_streams(full, message) from None

    async def authenticated(self, scope, headers, request_id, toolset):
        """The request's caller (401 with the resource metadata when none), its toolset
        (404 when not active) and the 2025 session its header names (``with_session``)."""
        scheme, _, raw = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise unauthorized(scope, headers, "An agent token is required.", presented=False)
        try:
            user, credentials, toolset_active, found = await calls.in_thread(
                lookups, raw.strip(), toolset, headers.get("mcp-session-id")
            )
        except AuthenticationFailed as exc:
            raise unauthorized(scope, headers, str(exc.detail), presented=True) from None
        delegation = credentials.delegation
        if delegation is not None:
            resource = base_url(scope, headers) + scope["path"].rstrip("/")
            if not delegation.is_for(resource):
                message = f"This token is for {delegation.resource}, not {resource} (RFC 8707)."
                raise unauthorized(scope, headers, message, presented=True)
        if not toolset_active:
            raise Refused(404, {"error": "not_found", "message": "No such toolset."})
        client = scope.get("client")
        request = sessions.McpRequest(
            user=user,
            registry=credentials.registry,
            token_hash=(delegation or credentials.token).token_hash,
            delegation=delegation,
            request_id=request_id,
            client_address=client[0] if client else None,
            base_url=base_url(scope, headers),
            toolset=toolset,
            recheck=_again(raw.strip()),
        )
        return request, found

    @staticmethod
    def with_session(request: sessions.McpRequest, headers, found) -> None:
        """The session the request's ``Mcp-Session-Id`` names (``lookups`` found it)."""
        if headers.get("mcp-session-id") is None:
            return
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
        """What the body says about the client; a 2025 ``initialize`` opens a session.
        Refused first: metadata headers that say other than the body."""
        mismatch = header_mismatch(message, headers)
        if mismatch is not None:
            raise mismatch
        params, meta = params_of(message), meta_of(message)
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
        return self.session_on_success(params, request, send)

    def session_on_success(self, params: dict, request: sessions.McpRequest, send):
        """A ``send`` that holds the ``initialize`` response until the SDK's answer is
        known, and stores a session (its id in ``Mcp-Session-Id``) only for a result."""
        info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        capabilities = params.get("capabilities")
        elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
        url_elicitation = isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)
        held: list[dict] = []
        decided = False

        async def open_session(answer: dict) -> sessions.Session:
            agreed = answer["result"].get("protocolVersion")
            return await calls.in_thread(
                lambda: sessions.session_open(
                    token_hash=request.token_hash,
                    client_name=str(info.get("name", "")),
                    client_version=str(info.get("version", "")),
                    protocol_version=agreed
                    if agreed in HANDSHAKE_PROTOCOL_VERSIONS
                    else LATEST_HANDSHAKE_VERSION,
                    url_elicitation=url_elicitation,
                )
            )

        async def decide(start: dict, answer: dict | None) -> None:
            if start["status"] == 200 and isinstance((answer or {}).get("result"), dict):
                session = await open_session(answer)
                extra = (b"mcp-session-id", session.id.encode())
                start = {**start, "headers": [*start.get("headers", []), extra]}
            await send(start)
            for message in held[1:]:
                await send(message)

        async def send_after_answer(message):
            nonlocal decided
            if decided:
                await send(message)
                return
            held.append(message)
            if message["type"] != "http.response.body":
                return
            body = b"".join(m.get("body", b"") for m in held[1:])
            answer = initialize_answer(body)
            if answer is not None or not message.get("more_body"):
                decided = True
                await decide(held[0], answer)

        return send_after_answer

    async def resource_metadata(self, scope, send, headers, resource_path: str) -> None:
        """RFC 9728 protected-resource metadata: the token goes in the header."""
        base = base_url(scope, headers)
        await respond(
            send,
            200,
            {
                "resource": base + (resource_path or "/mcp"),
                # ToolHub is its own authorization server (registry.oauth): its metadata
                # is at <base>/.well-known/oauth-authorization-server (RFC 8414).
                "authorization_servers": [base],
                "scopes_supported": list(settings.TOOLHUB_OAUTH_SCOPES),
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
        async with self.stream_place(request, None) as stream:
            head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            notice = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

            gone = False

            async def until_disconnected(cancel_scope):
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                cancel_scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(until_disconnected, tg.cancel_scope)
                async for changed in stream.changes():
                    chunk = f"event: message\ndata: {notice}\n\n" if changed else ": ping\n\n"
                    await send(
                        {"type": "http.response.body", "body": chunk.encode(), "more_body": True}
                    )
                tg.cancel_scope.cancel()  # the token was revoked or expired: the stream ends
            if not gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def cancel_by_rpc(request: sessions.McpRequest, rpc_id) -> None:
    """A ``notifications/cancelled`` for a call this or another process admitted."""
    if rpc_id is None:
        return
    execution_id = sessions.call_find(request, rpc_id)
    if execution_id is not None:
        calls.cancel(request, execution_id)


application = Gate()
