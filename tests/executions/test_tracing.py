"""Traces: one trace from the API request through admission, the worker and the upstream.

The test process records its spans with the SDK's in-memory exporter; a real
Celery worker exports its own over OTLP/HTTP to a receiver on loopback
(tests/servers/otlp_collector.py), as it would to a collector.
"""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from django.db import connection
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from executions.executors.http import close_transport
from executions.models import Execution
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.test_database_executor import pg_engine  # noqa: F401 (a fixture)
from tests.executions.test_mcp import ServerProcess, allow_all
from tests.factories import make_user
from tests.servers.otlp_collector import OTLPCollector
from tests.workers import celery_worker, wait_for
from toolhub import tracing
from toolhub.middleware import RequestIDLogFilter

pytestmark = pytest.mark.django_db(transaction=True)

CANARY_ARGUMENT = f"argument-canary-{uuid.uuid4().hex}"
CANARY_SECRET = f"secret-canary-{uuid.uuid4().hex}"


@pytest.fixture
def spans():
    """Tracing on in this process, spans kept in memory; off again afterwards."""
    exporter = InMemorySpanExporter()
    tracing.setup(span_processor=SimpleSpanProcessor(exporter))
    # Connections and pools made before the instrumentation are not traced: start afresh.
    connection.close()
    close_transport()
    yield exporter
    tracing.teardown()
    exporter.shutdown()
    connection.close()
    close_transport()


def trace_id_of(span) -> str:
    return format(span.context.trace_id, "032x")


def span_id_of(span) -> str:
    return format(span.context.span_id, "016x")


def named(exporter, name: str):
    found = [s for s in exporter.get_finished_spans() if s.name == name]
    assert found, f"no span {name!r} in {[s.name for s in exporter.get_finished_spans()]}"
    return found


def traceparent_ids(value: str) -> tuple[str, str]:
    """(trace id, parent span id) of a W3C ``traceparent`` header."""
    version, trace_id, parent_id, flags = value.split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    return trace_id, parent_id


@pytest.fixture
def keyed_tool(upstream, allow_loopback):
    """An HTTP tool with a secret API key in its query and the caller's argument in its path."""
    owner = make_user("owner-traced")
    role = role_services.role_create(actor=None, name="traced-callers")
    agent = agent_services.agent_create(
        actor=None, name="agent-traced", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="traced_echo",
        type="http",
        timeout_seconds=5,
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/echo/{path}"},
            {
                "config_key": "query_params",
                "config_value": {"api_key": CANARY_SECRET},
                "is_secret": True,
            },
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"tool": tool, "client": token_client(agent.user), "upstream": upstream}


def test_one_trace_runs_from_the_api_request_through_admission_and_the_run_to_the_upstream(
    spans, keyed_tool
):
    client, upstream = keyed_tool["client"], keyed_tool["upstream"]
    response = client.post(
        "/api/v1/executions",
        {"tool": "traced_echo", "input_data": {"path": CANARY_ARGUMENT}, "wait": True},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "succeeded", (body["error_type"], body["error_message"])

    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    trace_id = trace_id_of(server)
    admission = named(spans, "toolhub.admission")[0]
    run = named(spans, "toolhub.run")[0]
    executor = named(spans, "toolhub.executor")[0]
    (upstream_span,) = [
        s
        for s in spans.get_finished_spans()
        if s.kind == SpanKind.CLIENT and s.instrumentation_scope.name.endswith("httpx")
    ]
    for span in (admission, run, executor, upstream_span):
        assert trace_id_of(span) == trace_id, span.name
    # Nested as they run: request > admission; request > run > executor > HTTP request.
    assert admission.parent.span_id == server.context.span_id
    assert executor.parent.span_id == run.context.span_id
    assert upstream_span.parent.span_id == executor.context.span_id

    # The upstream received the trace context of the HTTP request's span.
    assert traceparent_ids(upstream.last.headers["traceparent"]) == (
        trace_id,
        span_id_of(upstream_span),
    )
    # The record and the API name the trace.
    assert body["trace_id"] == trace_id
    assert Execution.objects.get(pk=body["id"]).trace_id == trace_id
    assert admission.attributes["toolhub.execution.id"] == body["id"]
    assert admission.attributes["toolhub.tool.name"] == "traced_echo"
    assert run.attributes["toolhub.execution.status"] == "succeeded"
    assert executor.attributes["toolhub.executor.ok"] is True
    assert executor.attributes["toolhub.upstream.status_code"] == 200


def test_no_span_carries_an_argument_value_or_a_secret(spans, keyed_tool):
    client = keyed_tool["client"]
    response = client.post(
        "/api/v1/executions",
        {"tool": "traced_echo", "input_data": {"path": CANARY_ARGUMENT}, "wait": True},
        format="json",
    )
    assert response.status_code == 200
    assert CANARY_SECRET in keyed_tool["upstream"].last.raw_query  # it was sent
    recorded = [
        (span.name, json.dumps(dict(span.attributes), default=str), span.events)
        for span in spans.get_finished_spans()
    ]
    text = repr(recorded)
    assert CANARY_ARGUMENT not in text
    assert CANARY_SECRET not in text
    # The upstream's span keeps the origin only: the path and query hold arguments and keys.
    (upstream_span,) = [
        s for s in spans.get_finished_spans() if s.instrumentation_scope.name.endswith("httpx")
    ]
    urls = [v for k, v in upstream_span.attributes.items() if k in ("url.full", "http.url")]
    assert urls == [keyed_tool["upstream"].url.rstrip("/")]


def test_a_refused_call_is_recorded_with_its_trace_and_the_span_says_why(spans, keyed_tool):
    client = keyed_tool["client"]
    response = client.post(
        "/api/v1/executions", {"tool": "traced_echo", "input_data": {}}, format="json"
    )
    assert response.status_code == 422
    admission = named(spans, "toolhub.admission")[0]
    assert admission.attributes["toolhub.execution.reason_code"] == "invalid_arguments"
    assert admission.status.is_ok  # a refusal is the caller's error, not ours
    refused = Execution.objects.get(pk=response.json()["error"]["execution_id"])
    assert refused.trace_id == trace_id_of(admission)


def test_log_records_carry_the_trace_id_of_the_request_they_were_logged_in(spans, keyed_tool):
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Keep()
    handler.addFilter(RequestIDLogFilter())
    handler.addFilter(tracing.TraceLogFilter())
    logging.getLogger().addHandler(handler)
    try:
        # Django logs "Not Found" after the request's span has ended.
        missing = keyed_tool["client"].get(f"/api/v1/executions/{uuid.uuid4()}")
        with tracing.span("toolhub.test") as current:
            logging.getLogger("toolhub.test").warning("inside a span")
    finally:
        logging.getLogger().removeHandler(handler)
    assert missing.status_code == 404
    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    (not_found,) = [r for r in records if r.name == "django.request"]
    assert not_found.trace_id == trace_id_of(server)
    (inside,) = [r for r in records if r.name == "toolhub.test"]
    assert inside.trace_id == format(current.get_span_context().trace_id, "032x")
    assert inside.span_id == format(current.get_span_context().span_id, "016x")


def test_with_tracing_off_records_and_logs_have_no_trace(keyed_tool):
    assert not tracing.enabled()
    response = keyed_tool["client"].post(
        "/api/v1/executions",
        {"tool": "traced_echo", "input_data": {"path": "plain"}, "wait": True},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["trace_id"] == ""
    assert "traceparent" not in keyed_tool["upstream"].last.headers
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    tracing.TraceLogFilter().filter(record)
    assert record.trace_id == "-"


def test_the_admin_shows_the_trace_id_of_an_execution(spans, keyed_tool, client, superuser):
    response = keyed_tool["client"].post(
        "/api/v1/executions",
        {"tool": "traced_echo", "input_data": {"path": "plain"}, "wait": True},
        format="json",
    )
    execution = Execution.objects.get(pk=response.json()["id"])
    assert len(execution.trace_id) == 32
    client.force_login(superuser)
    page = client.get(f"/admin/executions/execution/{execution.pk}/change/")
    assert page.status_code == 200
    assert execution.trace_id in page.content.decode()
    found = client.get("/admin/executions/execution/", {"q": execution.trace_id})
    assert str(execution.pk)[:8] in found.content.decode()


# --------------------------------------------------------------------------- MCP


def test_an_mcp_call_carries_the_trace_context_in_its_meta(spans):
    from executions.executors.mcp import MCPExecutor
    from tests.executions.test_mcp import make_call

    server = ServerProcess("streamable-http").start()
    try:
        spec = {"name": "web", "transport": "streamable_http", "url": server.url}
        with tracing.span("toolhub.test") as current:
            result = MCPExecutor(egress_check=allow_all).execute(
                make_call(spec, "trace_context", {})
            )
    finally:
        server.stop()
    assert result.ok, result.error_message
    received = json.loads(result.output["content"][0]["text"])
    trace_id, parent_id = traceparent_ids(received["traceparent"])
    assert trace_id == format(current.get_span_context().trace_id, "032x")
    # The parent is the MCP SDK's client span for this tools/call, inside our trace.
    (call_span,) = [
        s for s in spans.get_finished_spans() if s.name.endswith("tools/call trace_context")
    ]
    assert parent_id == span_id_of(call_span)
    assert trace_id_of(call_span) == trace_id


# --------------------------------------------------------------------------- a real worker


@pytest.mark.slow
def test_the_trace_continues_in_a_real_worker_to_the_upstream(spans, keyed_tool):
    client, upstream = keyed_tool["client"], keyed_tool["upstream"]
    with OTLPCollector() as collector:
        worker_env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
        with celery_worker(extra_env=worker_env):
            queued = client.post(
                "/api/v1/executions",
                {"tool": "traced_echo", "input_data": {"path": "plain"}},
                format="json",
            )
            assert queued.status_code == 202, queued.json()
            execution_id = queued.json()["id"]
            # The run's span ends last: the spans inside it were exported before or with it.
            received = collector.wait_for(lambda found: any(s.name == "toolhub.run" for s in found))
        wait_for(lambda: Execution.objects.get(pk=execution_id).status == "succeeded")

    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    trace_id = trace_id_of(server)
    assert queued.json()["trace_id"] == trace_id
    assert Execution.objects.get(pk=execution_id).trace_id == trace_id
    (dispatch,) = named(spans, "toolhub.dispatch")
    (publish,) = named(spans, "apply_async/executions.run")
    assert trace_id_of(dispatch) == trace_id_of(publish) == trace_id

    by_name = {s.name: s for s in received}
    task = by_name["run/executions.run"]
    run = by_name["toolhub.run"]
    executor = by_name["toolhub.executor"]
    (upstream_span,) = [s for s in received if s.parent_span_id == executor.span_id]
    assert upstream_span.kind == 3  # SPAN_KIND_CLIENT
    assert upstream_span.attributes.get("http.method", "GET") == "GET"
    assert {s.service for s in (task, run, executor, upstream_span)} == {"toolhub-worker"}
    # The worker's spans are in the request's trace, under the publish of the task.
    for span in (task, run, executor, upstream_span):
        assert span.trace_id == trace_id, span.name
    assert task.parent_span_id == span_id_of(publish)
    assert run.parent_span_id == task.span_id
    assert upstream_span.parent_span_id == executor.span_id
    assert run.attributes["toolhub.execution.id"] == execution_id
    assert traceparent_ids(upstream.last.headers["traceparent"]) == (
        trace_id,
        upstream_span.span_id,
    )


# --------------------------------------------------------------------------- database tools


def test_a_database_tools_error_quoting_an_argument_reaches_no_span(
    spans,
    pg_engine,  # noqa: F811 (the fixture imported above)
    allow_loopback,
):
    from tests.executions.test_database_executor import run as run_database_tool

    with tracing.span("toolhub.test"):
        # Not read-only: a plain cursor (a read-only SELECT reads through a named one).
        result = run_database_tool(
            pg_engine.url, "SELECT CAST(:n AS integer)", {"n": CANARY_ARGUMENT}, read_only=False
        )
    assert not result.ok
    assert CANARY_ARGUMENT in result.error_message  # PostgreSQL quotes the value it refused
    recorded = [
        (span.name, dict(span.attributes), span.events, span.status.description)
        for span in spans.get_finished_spans()
    ]
    assert CANARY_ARGUMENT not in repr(recorded)


# --------------------------------------------------------------------------- ASGI


def test_a_request_served_over_asgi_has_its_server_span_and_trace(spans, keyed_tool):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    token = keyed_tool["client"]._credentials["HTTP_AUTHORIZATION"]
    response = async_to_sync(AsyncClient().get)(
        f"/api/v1/executions/{uuid.uuid4()}", headers={"Authorization": token}
    )
    assert response.status_code == 404
    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert (
        server.attributes.get(
            "http.status_code", server.attributes.get("http.response.status_code")
        )
        == 404
    )


def test_an_mcp_request_has_a_server_span_joining_the_trace_its_meta_names(spans, keyed_tool):
    """The MCP endpoint is an ASGI app of its own (no Django instrumentation sees it): its
    requests get a server span, child of the W3C trace context the request's ``_meta``
    carries, and the call's admission and run are in that trace."""
    import asyncio

    import httpx
    from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

    from executions.mcp_server.gate import Gate

    token = keyed_tool["client"]._credentials["HTTP_AUTHORIZATION"]
    caller_trace, caller_span = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    meta = {
        PROTOCOL_VERSION_META_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_META_KEY: {},
        "traceparent": f"00-{caller_trace}-{caller_span}-01",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "traced_echo", "arguments": {"path": CANARY_ARGUMENT}, "_meta": meta},
    }
    headers = {
        "Authorization": token,
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "traced_echo",
    }

    async def scenario():
        gate = Gate()
        async with gate.lifespan():
            transport = httpx.ASGITransport(app=gate)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
                return await http.post("/mcp", json=body, headers=headers)

    response = asyncio.run(scenario())
    assert response.status_code == 200, response.text
    (server,) = named(spans, "tools/call traced_echo")
    assert server.kind == SpanKind.SERVER
    assert trace_id_of(server) == caller_trace
    assert format(server.parent.span_id, "016x") == caller_span
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.tool.name"] == "traced_echo"
    (admission,) = named(spans, "toolhub.admission")
    assert trace_id_of(admission) == caller_trace
    execution = Execution.objects.get(tool_name="traced_echo")
    assert execution.trace_id == caller_trace
    # Nothing of the arguments reached a span.
    assert CANARY_ARGUMENT not in json.dumps(
        [dict(s.attributes or {}) for s in spans.get_finished_spans()]
        + [s.name for s in spans.get_finished_spans()]
    )
