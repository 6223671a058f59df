"""A minimal OTLP/HTTP trace receiver on 127.0.0.1, standing in for a collector.

Processes under test (a Celery worker) export to it with the OTLP exporter
ToolHub ships (``OTEL_EXPORTER_OTLP_ENDPOINT=<url>``); it decodes each
``POST /v1/traces`` with the protobuf classes that exporter depends on and
keeps every span it received.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]


def _value(any_value) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _spans(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        service=str(resource.get("service.name", "")),
                        name=span.name,
                        kind=span.kind,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                    )
                )
    return found


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            received = _spans(ExportTraceServiceRequest.FromString(body))
            with self.server.lock:
                self.server.spans.extend(received)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    spans: list[ReceivedSpan]


class OTLPCollector:
    """``with OTLPCollector() as collector``: ``collector.url`` is the endpoint to set."""

    def __enter__(self) -> OTLPCollector:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.lock = threading.Lock()
        self._server.spans = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._server.lock:
            return list(self._server.spans)

    def wait_for(self, predicate, timeout: float = 20.0) -> list[ReceivedSpan]:
        """The spans received once ``predicate(spans)`` holds (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.spans
            if predicate(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"the collector did not receive the spans awaited: {self.spans}")
