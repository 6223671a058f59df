"""OpenTelemetry traces: on when an exporter is configured, absent otherwise.

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
or ``OTEL_TRACES_EXPORTER`` is set, unless ``OTEL_SDK_DISABLED=true`` or the
exporter is ``none``. Then ``setup()`` installs one tracer provider for the
process and the maintained instrumentations of what a call passes through:
Django (the request), Celery (publish and run, the trace context riding in the
message headers), psycopg, Redis and httpx. Off, nothing is installed and
nothing of OpenTelemetry is imported: ``span()`` hands back a shared object
whose methods do nothing, ``current_trace_id()`` answers "".

Called from the entry points, before they build their application: the WSGI
and ASGI modules (web, ``runserver``), and each Celery worker process once it
is forked (``toolhub.celery``). Everything else follows the standard
``OTEL_*`` variables (service name, resource, sampler, batch delays, OTLP
headers); docs/operations.md "Traces" lists what matters here.

Spans never carry argument values, outputs or secrets: our own spans name the
tool, the execution and its outcome; the upstream HTTP span keeps the origin of
the URL only (its path and query may hold arguments or keys); SQL and Redis
spans carry statements with placeholders, never values.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

_enabled = False
_lock = threading.Lock()
_provider: Any = None
_tracer: Any = None
_instrumentors: list[Any] = []
_trace_http_upstreams = True
TRACER_NAME = "toolhub"

# Probes and scrapes answer in microseconds every few seconds: a trace each is noise.
DEFAULT_EXCLUDED_URLS = "healthz,readyz,metrics,static/,favicon.ico"


def configured(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the standard OTel variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporter_names(environ)
    if exporters:
        return exporters != ["none"]
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def enabled() -> bool:
    return _enabled


def _exporter_names(environ: Mapping[str, str]) -> list[str]:
    raw = environ.get("OTEL_TRACES_EXPORTER", "")
    return [name.strip().lower() for name in raw.split(",") if name.strip()]


def setup(*, service_name: str = "toolhub", web: bool = True, span_processor=None) -> bool:
    """Install tracing in this process when configured; True when it is on.

    ``web``: also trace Django's requests (not in Celery workers).
    ``span_processor``: where spans go instead of the configured exporters
    (tests pass the SDK's in-memory exporter); it turns tracing on by itself.
    Safe to call more than once: the first call that turns tracing on wins.
    """
    global _enabled, _tracer
    with _lock:
        if _enabled:
            return True
        if span_processor is None and not configured():
            return False
        provider = _tracer_provider(service_name)
        _tracer = provider.get_tracer(TRACER_NAME)
        processors = [span_processor] if span_processor is not None else _processors()
        for processor in processors:
            provider.add_span_processor(processor)
        _instrument(provider, web=web)
        _enabled = True
        return True


def _tracer_provider(service_name: str):
    """The process's SDK tracer provider (made and installed once per process)."""
    global _provider
    if _provider is not None:
        return _provider
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        # OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name it otherwise.
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    # The sampler the OTEL_TRACES_SAMPLER variables choose (the SDK reads them).
    configured_sampler = TracerProvider(shutdown_on_exit=False).sampler
    _provider = TracerProvider(resource=resource, sampler=_quiet_sampler(configured_sampler))
    trace.set_tracer_provider(_provider)
    return _provider


def _quiet_sampler(base):
    """``base``, except that the periodic housekeeping tasks (every 2 s) start no trace."""
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

    quiet = frozenset(
        f"{kind}/{task}"
        for task in settings.TOOLHUB_HOUSEKEEPING_TASKS
        for kind in ("run", "apply_async")
    )

    class QuietHousekeeping(Sampler):
        def should_sample(self, parent_context, trace_id, name, *args, **kwargs):
            if name in quiet:
                return SamplingResult(Decision.DROP)
            return base.should_sample(parent_context, trace_id, name, *args, **kwargs)

        def get_description(self) -> str:
            return f"QuietHousekeeping{{{base.get_description()}}}"

    return QuietHousekeeping()


def _processors() -> list[Any]:
    """A batch processor per exporter OTEL_TRACES_EXPORTER names (default: OTLP)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    processors = []
    for name in _exporter_names(os.environ) or ["otlp"]:
        if name == "otlp":
            processors.append(BatchSpanProcessor(_otlp_exporter()))
        elif name == "console":
            processors.append(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name != "none":
            raise ImproperlyConfigured(
                f"OTEL_TRACES_EXPORTER: unknown exporter {name!r}; use otlp, console or none."
            )
    return processors


def _otlp_exporter():
    """OTLP over HTTP/protobuf (installed with ToolHub); gRPC when its exporter is installed.
    The exporter reads the endpoint, headers, timeout and TLS settings from OTEL_* itself."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GRPCSpanExporter,
            )
        except ImportError:
            raise ImproperlyConfigured(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package "
                "opentelemetry-exporter-otlp-proto-grpc; ToolHub ships http/protobuf (port 4318)."
            ) from None
        return GRPCSpanExporter()
    raise ImproperlyConfigured(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; use http/protobuf or grpc."
    )


def _instrumentor(name: str):
    """The instrumentor called ``name`` (the names OTEL_PYTHON_DISABLED_INSTRUMENTATIONS uses)."""
    if name == "django":
        from opentelemetry.instrumentation.django import DjangoInstrumentor as Instrumentor
    elif name == "celery":
        from opentelemetry.instrumentation.celery import CeleryInstrumentor as Instrumentor
    elif name == "psycopg":
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor as Instrumentor
    elif name == "redis":
        from opentelemetry.instrumentation.redis import RedisInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor as Instrumentor
    return Instrumentor()


def _instrument(provider, *, web: bool) -> None:
    """Install the instrumentations, except those OTEL_PYTHON_DISABLED_INSTRUMENTATIONS
    names (the variable OpenTelemetry's own auto-instrumentation reads)."""
    global _trace_http_upstreams
    raw = os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    disabled = {name.strip().lower() for name in raw.split(",") if name.strip()}
    _trace_http_upstreams = "httpx" not in disabled  # the HTTP executor's transport too
    options: dict[str, dict[str, Any]] = {
        "django": {
            "excluded_urls": os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS")
            or DEFAULT_EXCLUDED_URLS
        },
        "celery": {},
        # Statements with placeholders only; no SQL comments added to what PostgreSQL sees.
        "psycopg": {"enable_commenter": False},
        "redis": {},
        "httpx": {},
    }
    for name, kwargs in options.items():
        if name in disabled or (name == "django" and not web):
            continue
        instrumentor = _instrumentor(name)
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider, **kwargs)
            _instrumentors.append(instrumentor)


def teardown() -> None:
    """Remove the instrumentations and turn our spans off again (tests). The tracer
    provider stays installed: OpenTelemetry sets it once per process."""
    global _enabled
    with _lock:
        flush()
        while _instrumentors:
            _instrumentors.pop().uninstrument()
        _enabled = False


def flush(timeout_millis: int = 5000) -> None:
    """Export what is batched (a Celery worker process about to exit)."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


# --------------------------------------------------------------------------- our spans


class _QuietSpan:
    """What ``span()`` yields when tracing is off: every method does nothing."""

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def is_recording(self) -> bool:
        return False


_QUIET = contextlib.nullcontext(_QuietSpan())


def span(name: str, attributes: Mapping[str, Any] | None = None):
    """A context manager around a span of ours, current while it is open.

    ``attributes``: names, ids, kinds and outcomes, never argument values or
    secrets. Off, a shared no-op (no allocation, no import)."""
    if not _enabled:
        return _QUIET
    return _own_span(name, _clean(attributes))


@contextlib.contextmanager
def _own_span(name: str, attributes: dict[str, Any]):
    """An exception ends the span as an error named by its type only: its message may
    quote an argument (a database error quoting the value it refused)."""
    with (
        _tracer.start_as_current_span(
            name, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as current,
        _failures_by_type(current),
    ):
        yield current


@contextlib.contextmanager
def _failures_by_type(current):
    """An exception out of the block fails ``current``, named by its type only."""
    try:
        yield
    except BaseException as exc:
        current.set_attribute("error.type", type(exc).__qualname__)
        failed(current, type(exc).__qualname__)
        raise


def server_span(
    name: str, carriers: tuple[Mapping[str, Any], ...], attributes: Mapping[str, Any] | None = None
):
    """A server span for a request no instrumentation sees (the MCP endpoint), current
    while it is open: its parent is the W3C trace context (``traceparent``,
    ``tracestate``) of the first of ``carriers`` that has one (a request's ``_meta``, its
    headers), so the client's trace goes on here. Off, the shared no-op."""
    if not _enabled:
        return _QUIET
    return _server_span(name, carriers, _clean(attributes))


@contextlib.contextmanager
def _server_span(name: str, carriers: tuple[Mapping[str, Any], ...], attributes: dict):
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    parent = None
    for carrier in carriers:
        if isinstance(carrier, Mapping) and isinstance(carrier.get("traceparent"), str):
            fields = {k: carrier[k] for k in ("traceparent", "tracestate") if k in carrier}
            parent = propagate.extract({k: str(v) for k, v in fields.items()})
            break
    with (
        _tracer.start_as_current_span(
            name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as current,
        _failures_by_type(current),
    ):
        yield current


def current_context() -> Any:
    """The current trace context, to carry to a task that does not inherit it (None
    when off)."""
    if not _enabled:
        return None
    from opentelemetry import context

    return context.get_current()


@contextlib.contextmanager
def attached(carried: Any):
    """Make ``carried`` (from ``current_context()``) current for the block."""
    if carried is None or not _enabled:
        yield
        return
    from opentelemetry import context

    token = context.attach(carried)
    try:
        yield
    finally:
        context.detach(token)


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (attributes or {}).items() if v is not None and v != ""}


def failed(current: Any, description: str) -> None:
    """Mark ``current`` (a span from ``span()``) as an error, with a short description
    (an error type, never a message that may quote an argument)."""
    if not current.is_recording():
        return
    from opentelemetry.trace import Status, StatusCode

    current.set_status(Status(StatusCode.ERROR, description))


def current_trace_id() -> str:
    """The current trace's id as 32 hex digits ("" when off or outside a trace)."""
    if not _enabled:
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


def current_span_id() -> str:
    if not _enabled:
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.span_id, "016x") if context.is_valid else ""


# --------------------------------------------------------------------------- HTTP upstreams


def traced_http_transport(transport):
    """``transport`` wrapped by the httpx instrumentation's transport when tracing is
    on: a client span per request and ``traceparent`` in its headers. (Its global
    patch covers httpx's own transports; the HTTP executor has its own.)"""
    if not _enabled or not _trace_http_upstreams:
        return transport
    from opentelemetry.instrumentation.httpx import SyncOpenTelemetryTransport

    return SyncOpenTelemetryTransport(transport, request_hook=_origin_only)


_URL_ATTRIBUTES = ("url.full", "http.url")


def _origin_only(span, request) -> None:
    """Keep only scheme, host and port of the upstream URL on the span: a tool's path
    and query are built from the caller's arguments and may carry keys."""
    if not span.is_recording():
        return
    url = request.url
    origin = f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")
    recorded = getattr(span, "attributes", None) or {}
    for key in _URL_ATTRIBUTES:
        if key in recorded:
            span.set_attribute(key, origin)


# --------------------------------------------------------------------------- logs


class TraceLogFilter(logging.Filter):
    """Put the current trace and span ids on every record (``-`` outside a trace).

    Django logs a 4xx/5xx answer after the request's span has ended; such
    records carry the request, which still holds the id its span had.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = current_trace_id()
        if not trace_id:
            trace_id = getattr(getattr(record, "request", None), "trace_id", "")
        record.trace_id = trace_id or "-"
        record.span_id = current_span_id() or "-"
        return True
