"""A real HTTP/1.1 server on 127.0.0.1 for executor tests.

It records every request it receives (method, path, query, headers, body,
client port) and tracks how many requests were in flight at once. Routes:

* ``/echo`` (any method, any sub-path): JSON describing the request.
* ``/text``: a ``text/plain`` body (``?body=`` overrides it).
* ``/json-as-text``: a JSON document served as ``text/plain``.
* ``/status/<code>``: that status with a JSON body; ``?retry_after=`` adds a
  ``Retry-After`` header, ``?body=`` replaces the body with text.
* ``/slow/<seconds>``: sleeps, then answers JSON.
* ``/drip/<chunks>/<interval>``: a chunked body sent slowly.
* ``/redirect?to=<location>&status=302``: a redirect to any location (other
  hosts, ports, relative paths).
* ``/redirect-chain/<n>``: ``n`` relative redirects, then the echo.
* ``/attempts/<key>?fail=<n>&status=503``: fails the first ``n`` attempts
  for ``key``, then succeeds; counts in ``attempts``.
* ``/echo-header/<name>?status=401``: an error whose body and ``X-Echo``
  header repeat the value of request header ``<name>``.
* ``/large?size=<n>&chunked=1``: ``n`` bytes of ``x`` (``Content-Length`` or
  chunked).
* ``/form``: the parsed form body as JSON.
* ``/cookie``: sets a cookie.
* ``/nested?depth=<n>``: JSON nested ``n`` levels deep.
* ``/empty``: ``204 No Content``.
* ``/repeat?text=<text>&times=<n>``: the text ``n`` times (``text/plain``).
* ``/latin1?body=<text>&type=<media type>``: the body as Latin-1 bytes, no charset.
* ``/binary?with=<text>``: 1 KB of every byte value, then the text (octet-stream).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    raw_query: str
    headers: dict[str, str]  # lower-cased names, repeated headers joined with ", "
    header_list: list[tuple[str, str]]
    body: bytes
    client_port: int
    received_at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.text, keep_blank_values=True)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    upstream: UpstreamServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (timeouts, truncation) are expected here


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = (
        True  # headers and body are separate writes: no 40 ms delayed-ACK stalls
    )
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_GET

    # ------------------------------------------------------------------ plumbing

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        status: int,
        body: bytes | str | Any = b"",
        *,
        content_type: str = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes):
            body = json.dumps(body).encode("utf-8")
        # Out of flight once the answer is decided, before it is written: the caller may
        # act on it (free a concurrency slot, send the next request) before this thread
        # gets back from the write, and that next request must not count as overlapping.
        self._leave_once()
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers or []:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and status != 204:
            self.wfile.write(body)

    def _leave_once(self) -> None:
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.upstream._leave()

    def _dispatch(self) -> None:
        upstream = self.server.upstream
        upstream._enter()
        self._in_flight = True
        try:
            parts = urlsplit(self.path)
            body = self._read_body()
            header_list = list(self.headers.items())
            headers: dict[str, str] = {}
            for name, value in header_list:
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            record = RecordedRequest(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query, keep_blank_values=True),
                raw_query=parts.query,
                headers=headers,
                header_list=header_list,
                body=body,
                client_port=self.client_address[1],
            )
            upstream._record(record)
            self._route(record)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self._leave_once()

    # ------------------------------------------------------------------ routes

    def _route(self, req: RecordedRequest) -> None:
        segments = [s for s in req.path.split("/") if s]
        head = segments[0] if segments else ""
        q = {k: v[-1] for k, v in req.query.items()}
        upstream = self.server.upstream

        if head == "echo":
            parsed_json = None
            try:
                parsed_json = req.json()
            except ValueError:
                pass
            self._send(
                200,
                {
                    "method": req.method,
                    "path": req.path,
                    "query": req.query,
                    "headers": req.headers,
                    "body": req.text,
                    "json": parsed_json,
                },
            )
        elif head == "text":
            self._send(
                200, q.get("body", "plain text body"), content_type="text/plain; charset=utf-8"
            )
        elif head == "json-as-text":
            self._send(200, '{"looks": "like json", "n": 1}', content_type="text/plain")
        elif head == "status":
            code = int(segments[1])
            extra = [("Retry-After", q["retry_after"])] if "retry_after" in q else []
            if "body" in q:
                self._send(code, q["body"], content_type="text/plain", headers=extra)
            else:
                self._send(code, {"status": code, "path": req.path}, headers=extra)
        elif head == "slow":
            time.sleep(float(segments[1]))
            self._send(200, {"slept": float(segments[1])})
        elif head == "drip":
            chunks, interval = int(segments[1]), float(segments[2])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(chunks):
                self.wfile.write(b"1\r\nx\r\n")
                self.wfile.flush()
                time.sleep(interval)
            self.wfile.write(b"0\r\n\r\n")
        elif head == "redirect":
            status = int(q.get("status", "302"))
            self._send(status, "", content_type="text/plain", headers=[("Location", q["to"])])
        elif head == "redirect-chain":
            n = int(segments[1])
            if n > 0:
                self._send(
                    302,
                    "",
                    content_type="text/plain",
                    headers=[("Location", f"/redirect-chain/{n - 1}")],
                )
            else:
                self._send(200, {"chain": "done", "path": req.path})
        elif head == "attempts":
            key = segments[1]
            with upstream._lock:
                upstream.attempts[key] = upstream.attempts.get(key, 0) + 1
                attempt = upstream.attempts[key]
            if attempt <= int(q.get("fail", "0")):
                self._send(int(q.get("status", "503")), {"attempt": attempt, "failed": True})
            else:
                self._send(200, {"attempt": attempt})
        elif head == "echo-header":
            value = req.headers.get(segments[1].lower(), "")
            self._send(
                int(q.get("status", "401")),
                {"error": f"invalid credential {value!s} for this resource", "got": value},
                headers=[("X-Echo", value)],
            )
        elif head == "echo-encoded":
            # A debugging service quoting a header in the forms services do: base64
            # (alone and inside a longer encoded text), re-cased, URL-encoded.
            value = req.headers.get(segments[1].lower(), "").encode()
            self._send(
                200,
                {
                    "b64": base64.b64encode(value).decode(),
                    "b64url_unpadded": base64.urlsafe_b64encode(value).decode().rstrip("="),
                    "in_basic": base64.b64encode(b"user:" + value).decode(),
                    "in_longer": base64.b64encode(b"xy" + value + b"tail").decode(),
                    "upper": value.decode().upper(),
                    "quoted": quote(value.decode(), safe=""),
                },
            )
        elif head == "large":
            size = int(q.get("size", "1000"))
            chunk = b"x" * 65536
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            if q.get("chunked"):
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                remaining = size
                while remaining > 0:
                    piece = chunk[: min(remaining, len(chunk))]
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    remaining -= len(piece)
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.send_header("Content-Length", str(size))
                self.end_headers()
                remaining = size
                while remaining > 0:
                    piece = chunk[: min(remaining, len(chunk))]
                    self.wfile.write(piece)
                    remaining -= len(piece)
        elif head == "form":
            self._send(200, {"form": req.form(), "content_type": req.headers.get("content-type")})
        elif head == "cookie":
            self._send(
                200,
                {"cookie": "set"},
                headers=[("Set-Cookie", "session=abc123; HttpOnly"), ("X-Kept", "yes")],
            )
        elif head == "nested":
            depth = int(q.get("depth", "100000"))
            self._send(200, "[" * depth + "]" * depth)
        elif head == "empty":
            self._send(204)
        elif head == "repeat":
            # ``?text=`` ``?times=`` times, as text/plain (a large output made here).
            self._send(
                200, q.get("text", "x") * int(q.get("times", "1")), content_type="text/plain"
            )
        elif head == "latin1":
            # ``?body=`` sent as Latin-1 bytes with ``?type=`` and no charset.
            payload = q.get("body", "caf\u00e9").encode("latin-1")
            self.send_response(200)
            self.send_header("Content-Type", q.get("type", "text/plain"))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        elif head == "binary":
            payload = bytes(range(256)) * 4 + q.get("with", "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        else:
            self._send(404, {"error": "no such route", "path": req.path})


class UpstreamServer:
    """A recording HTTP server on 127.0.0.1 with a random port, served from a thread."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.attempts: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.upstream = self
        self.host = host
        self.port = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> UpstreamServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.attempts.clear()
            self.max_in_flight = self.in_flight

    @property
    def last(self) -> RecordedRequest:
        with self._lock:
            return self.requests[-1]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> UpstreamServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
