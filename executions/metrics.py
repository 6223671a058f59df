"""Execution gauges read from the database at each ``/metrics`` scrape.

Registered into ``toolhub.metrics`` by ``ExecutionsConfig.ready()``; see that
module's docstring for every metric ToolHub exports.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from executions.models import Approval, ApprovalStatus, Execution, ExecutionStatus

logger = logging.getLogger(__name__)


class DatabaseCollector:
    """Gauges read from the database at scrape time: a few indexed, grouped counts."""

    def collect(self):
        up = GaugeMetricFamily(
            "toolhub_metrics_database_up", "1 when the database answered this scrape's queries."
        )
        last_hour = GaugeMetricFamily(
            "toolhub_executions_last_hour",
            "Executions created in the last hour, by current status.",
            labels=["status"],
        )
        in_flight = GaugeMetricFamily(
            "toolhub_executions_in_flight",
            "Executions waiting for approval, queued or running (any age).",
            labels=["status"],
        )
        pending = GaugeMetricFamily(
            "toolhub_approvals_pending", "Approvals waiting for a human decision."
        )
        open_statuses = [
            ExecutionStatus.PENDING_APPROVAL,
            ExecutionStatus.QUEUED,
            ExecutionStatus.RUNNING,
        ]
        try:
            since = timezone.now() - timedelta(hours=1)
            recent = dict(
                Execution.objects.filter(created_at__gte=since)
                .order_by()
                .values_list("status")
                .annotate(n=Count("pk"))
            )
            open_now = dict(
                Execution.objects.filter(status__in=open_statuses)
                .order_by()
                .values_list("status")
                .annotate(n=Count("pk"))
            )
            waiting = Approval.objects.filter(status=ApprovalStatus.PENDING).count()
        except Exception as exc:
            logger.warning("metrics: database gauges unavailable: %s", exc.__class__.__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for status in ExecutionStatus.values:
            last_hour.add_metric([status], recent.get(status, 0))
        for status in open_statuses:
            in_flight.add_metric([str(status)], open_now.get(status, 0))
        pending.add_metric([], waiting)
        yield from (up, last_hour, in_flight, pending)
