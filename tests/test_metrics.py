"""/metrics: who may scrape it, what the middleware and record_execution count."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from executions.models import Approval, Execution
from tests.factories import make_user
from toolhub import metrics
from toolhub.rows import RowWriter

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.metrics_urls")]

TOKEN = "metrics-test-token-0123456789"
WITH_MIDDLEWARE = override_settings(
    MIDDLEWARE=[
        "toolhub.metrics.MetricsMiddleware",
        *(m for m in django_settings.MIDDLEWARE if m != "toolhub.metrics.MetricsMiddleware"),
    ]
)


def sample(name: str, **labels) -> float:
    return metrics.PROCESS_REGISTRY.get_sample_value(name, labels) or 0.0


def scraped(response) -> dict[tuple[str, tuple], float]:
    values = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return values


@pytest.fixture
def token(settings):
    settings.TOOLHUB_METRICS_TOKEN = TOKEN
    return TOKEN


def test_no_credentials_is_401_without_data(client, token):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"toolhub_" not in response.content


def test_wrong_token_is_401(client, token):
    for header in (f"Bearer {TOKEN}x", "Bearer wrong", f"Basic {TOKEN}", "Bearer "):
        response = client.get("/metrics", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401 and b"toolhub_" not in response.content


def test_token_is_refused_when_none_is_configured(client, settings):
    settings.TOOLHUB_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 401


def test_right_token_is_200_with_exposition(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    body = response.content.decode()
    for name in (
        "toolhub_http_requests_total",
        "toolhub_executions_total",
        "toolhub_execution_duration_seconds",
        "toolhub_approvals_pending",
        "toolhub_executions_last_hour",
        "toolhub_metrics_database_up 1.0",
        "process_cpu_seconds_total",
    ):
        assert name in body


def test_token_is_read_at_request_time(client, settings):
    settings.TOOLHUB_METRICS_TOKEN = "first-token"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer first-token").status_code == 200
    settings.TOOLHUB_METRICS_TOKEN = "second-token"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer first-token").status_code == 401


def test_staff_sessions_of_reviewers_and_admins_only(token, reviewer_user, staff_user, superuser):
    for user in (reviewer_user, staff_user, superuser):
        client = Client()
        client.force_login(user)
        assert client.get("/metrics").status_code == 200
    for user in (make_user("plain-staff", is_staff=True), make_user("not-staff")):
        client = Client()
        client.force_login(user)
        response = client.get("/metrics")
        assert response.status_code == 403 and b"toolhub_" not in response.content


def test_post_is_not_allowed(client, token):
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


@WITH_MIDDLEWARE
def test_middleware_counts_requests_by_route_and_status_class(client, token):
    ok = {"method": "GET", "route": "healthz", "status": "2xx"}
    missing = {"method": "GET", "route": "unmatched", "status": "4xx"}
    before_ok = sample("toolhub_http_requests_total", **ok)
    before_missing = sample("toolhub_http_requests_total", **missing)
    before_latency = sample(
        "toolhub_http_request_duration_seconds_count", method="GET", route="healthz"
    )
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz").status_code == 200
    assert client.get("/no/such/page").status_code == 404
    assert sample("toolhub_http_requests_total", **ok) == before_ok + 2
    assert sample("toolhub_http_requests_total", **missing) == before_missing + 1
    assert (
        sample("toolhub_http_request_duration_seconds_count", method="GET", route="healthz")
        == before_latency + 2
    )
    # An invented method does not create a new series.
    client.generic("BREW", "/healthz")
    assert sample("toolhub_http_requests_total", method="BREW", route="healthz", status="4xx") == 0
    # The scrape shows the same counter.
    values = scraped(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    key = ("toolhub_http_requests_total", tuple(sorted(ok.items())))
    assert values[key] == sample("toolhub_http_requests_total", **ok)


@WITH_MIDDLEWARE
def test_middleware_uses_route_names_not_paths(client, reviewer_client):
    before = sample(
        "toolhub_http_requests_total", method="GET", route="execution-stats", status="2xx"
    )
    reviewer_client.get("/api/v1/stats")
    reviewer_client.get("/api/v1/stats", {"group_by": "agent"})
    after = sample(
        "toolhub_http_requests_total", method="GET", route="execution-stats", status="2xx"
    )
    assert after == before + 2


def execution(**fields):
    base = {
        "status": "succeeded",
        "tool_type": "http",
        "execution_time_ms": 250.0,
        "reason_code": "",
    }
    return SimpleNamespace(**{**base, **fields})


def test_record_execution_counts_terminal_executions():
    labels = {"tool_type": "http", "status": "succeeded"}
    count = sample("toolhub_executions_total", **labels)
    observed = sample("toolhub_execution_duration_seconds_count", **labels)
    seconds = sample("toolhub_execution_duration_seconds_sum", **labels)
    metrics.record_execution(execution())
    assert sample("toolhub_executions_total", **labels) == count + 1
    assert sample("toolhub_execution_duration_seconds_count", **labels) == observed + 1
    assert sample("toolhub_execution_duration_seconds_sum", **labels) == pytest.approx(
        seconds + 0.25
    )


def test_record_execution_ignores_non_terminal_and_bounds_labels():
    queued = sample("toolhub_executions_total", tool_type="http", status="queued")
    metrics.record_execution(execution(status="queued"))
    assert sample("toolhub_executions_total", tool_type="http", status="queued") == queued == 0

    unknown = sample("toolhub_executions_total", tool_type="unknown", status="denied")
    reason = sample("toolhub_execution_refusals_total", reason="rate_limited")
    weird = sample("toolhub_execution_refusals_total", reason="other")
    metrics.record_execution(
        execution(status="denied", tool_type="", execution_time_ms=None, reason_code="rate_limited")
    )
    metrics.record_execution(
        execution(status="denied", tool_type="shell", execution_time_ms=None, reason_code="a b{}")
    )
    assert sample("toolhub_executions_total", tool_type="unknown", status="denied") == unknown + 2
    assert sample("toolhub_execution_refusals_total", reason="rate_limited") == reason + 1
    assert sample("toolhub_execution_refusals_total", reason="other") == weird + 1


def test_record_execution_never_raises():
    metrics.record_execution(object())
    metrics.record_execution(execution(execution_time_ms="not a number"))


def test_database_gauges(client, token):
    now = timezone.now()
    waiting = Execution.objects.create(tool_name="t", status="pending_approval")
    Approval.objects.create(execution=waiting, input_hash="x", expires_at=now + timedelta(hours=1))
    Execution.objects.create(tool_name="t", status="running")
    Execution.objects.create(tool_name="t", status="succeeded")
    # Two hours ago (toolhub.rows keeps a preset created_at; a finished row can't be changed).
    RowWriter(Execution).insert(
        Execution(tool_name="t", status="succeeded", created_at=now - timedelta(hours=2))
    )
    values = scraped(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    assert values[("toolhub_approvals_pending", ())] == 1
    assert values[("toolhub_executions_last_hour", (("status", "succeeded"),))] == 1
    assert values[("toolhub_executions_last_hour", (("status", "failed"),))] == 0
    assert values[("toolhub_executions_in_flight", (("status", "running"),))] == 1
    assert values[("toolhub_executions_in_flight", (("status", "pending_approval"),))] == 1
    assert values[("toolhub_metrics_database_up", ())] == 1


def test_multiprocess_mode_merges_processes(tmp_path):
    """With PROMETHEUS_MULTIPROC_DIR set, counters from separate processes add up."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    writer = textwrap.dedent(
        """
        from types import SimpleNamespace
        from toolhub import metrics
        assert metrics.MULTIPROCESS
        run = SimpleNamespace(status="failed", tool_type="mcp", execution_time_ms=1500.0, reason_code="")
        metrics.record_execution(run)
        """
    )
    reader = textwrap.dedent(
        """
        from prometheus_client import CollectorRegistry, multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        labels = {"tool_type": "mcp", "status": "failed"}
        print(registry.get_sample_value("toolhub_executions_total", labels))
        print(registry.get_sample_value("toolhub_execution_duration_seconds_sum", labels))
        """
    )
    cwd = django_settings.BASE_DIR
    for _ in range(2):
        subprocess.run([sys.executable, "-c", writer], env=env, cwd=cwd, check=True)
    out = subprocess.run(
        [sys.executable, "-c", reader], env=env, cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.split()
    assert [float(v) for v in out] == [2.0, 3.0]
