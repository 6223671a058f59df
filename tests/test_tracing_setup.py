"""Tracing is on when the standard OTel variables ask for it, and absent otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision

from toolhub import tracing

ROOT = Path(__file__).resolve().parent.parent

# Loads the web application as gunicorn does, then reports what tracing installed.
PROBE = """
import json, logging, sys
import toolhub.wsgi
from django.conf import settings
from opentelemetry import trace
provider = trace.get_tracer_provider()
handler = logging.getLogger().handlers[0]
print(json.dumps({
    "provider": type(provider).__name__,
    "service": dict(getattr(provider, "resource", None).attributes) if hasattr(provider, "resource") else {},
    "sampler": provider.sampler.get_description() if hasattr(provider, "sampler") else "",
    "instrumentations": sorted(m for m in sys.modules if m.startswith("opentelemetry.instrumentation.")),
    "sdk_imported": "opentelemetry.sdk" in sys.modules,
    "first_middleware": settings.MIDDLEWARE[0],
    "log_format": handler.formatter._fmt,
}))
"""


def run_probe(tmp_path, **environ) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OTEL_") and k not in {"DATABASE_URL", "REDIS_URL", "DEBUG"}
    }
    clean.update(
        TOOLHUB_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="toolhub.settings", **environ
    )
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_with_no_otel_variable_nothing_is_installed(tmp_path):
    result = run_probe(tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["provider"] == "ProxyTracerProvider"  # OpenTelemetry's default: no provider
    assert seen["instrumentations"] == []
    assert seen["sdk_imported"] is False
    assert seen["first_middleware"] == "toolhub.metrics.MetricsMiddleware"
    assert "trace_id" not in seen["log_format"]


def test_an_otlp_endpoint_turns_tracing_on_for_the_web_process(tmp_path):
    # Nothing listens there: spans are batched and the probe exits before any export.
    result = run_probe(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["provider"] == "TracerProvider"
    assert seen["service"]["service.name"] == "toolhub"
    assert "opentelemetry.instrumentation.django" in seen["instrumentations"]
    assert "opentelemetry.instrumentation.celery" in seen["instrumentations"]
    assert seen["first_middleware"].startswith("opentelemetry.instrumentation.django")
    assert "trace=%(trace_id)s" in seen["log_format"]
    # The sampler is the one OTEL_TRACES_SAMPLER chooses (default: parent-based, always on).
    assert seen["sampler"].startswith("QuietHousekeeping{ParentBased{root:AlwaysOnSampler,")


def test_the_sampler_and_service_name_follow_the_standard_variables(tmp_path):
    result = run_probe(
        tmp_path,
        OTEL_TRACES_EXPORTER="console",
        OTEL_SERVICE_NAME="toolhub-eu",
        OTEL_TRACES_SAMPLER="parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG="0.25",
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["service"]["service.name"] == "toolhub-eu"
    assert "TraceIdRatioBased{0.25}" in seen["sampler"]


def test_instrumentations_can_be_left_out_by_their_standard_variable(tmp_path):
    result = run_probe(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="psycopg, redis",
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert "opentelemetry.instrumentation.psycopg" not in seen["instrumentations"]
    assert "opentelemetry.instrumentation.redis" not in seen["instrumentations"]
    assert "opentelemetry.instrumentation.celery" in seen["instrumentations"]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://collector:4318"}, False),
    ],
)
def test_which_variables_turn_tracing_on(environ, expected):
    assert tracing.configured(environ) is expected


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER: unknown exporter 'zipkin'"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            },
            "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is not supported",
        ),
    ],
)
def test_an_unusable_exporter_setting_stops_the_start_naming_the_variable(tmp_path, environ, named):
    result = run_probe(tmp_path, **environ)
    assert result.returncode != 0
    assert named in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("name", "decision"),
    [
        ("run/registry.seal_audit", Decision.DROP),
        ("apply_async/executions.reap", Decision.DROP),
        ("run/executions.expire_approvals", Decision.DROP),
        ("run/executions.run", Decision.RECORD_AND_SAMPLE),
        ("POST ^api/v1/executions$", Decision.RECORD_AND_SAMPLE),
    ],
)
def test_the_periodic_housekeeping_tasks_start_no_trace(name, decision):
    sampler = tracing._quiet_sampler(ALWAYS_ON)
    assert sampler.should_sample(None, 1, name).decision is decision
