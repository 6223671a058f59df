"""The admin's integrity panel: Verify now runs audit_verify in a worker, audits its
result, and flags the records it found altered on their pages and in the lists."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from executions.models import Execution
from executions.services.pipeline import execution_request
from registry.models import AuditEvent, VerificationFinding, VerificationRun
from registry.services.audit_chain import audit_seal_all
from registry.services.verification_runs import verification_request, verification_run
from tests.executions.conftest import echo_caller
from tests.registry.test_audit_chain import tamper
from tests.workers import celery_worker
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db

VERIFY = reverse("admin:registry_auditevent_verify")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def done(upstream, allow_loopback, eager_tasks):
    caller = echo_caller(upstream, "integrity", "echo_integrity")
    execution = execution_request(
        user=caller["agent"].user, tool_ref="echo_integrity", arguments={"path": "echo"}, wait=True
    )
    assert execution.status == "succeeded"
    audit_seal_all(grace=timedelta(0))
    return execution


@pytest.fixture
def verify(django_capture_on_commit_callbacks):
    """POST "Verify now" as ``client``, then do the queued run as the worker would.

    (The task runs the same service; inside a test's transaction, Celery's own signal
    handlers would close the connection, so it is called directly here.)"""

    def post(client, **data):
        with django_capture_on_commit_callbacks(execute=False) as queued:
            response = client.post(VERIFY, data)
        assert len(queued) == 1
        run = VerificationRun.objects.get(status="queued")
        verification_run(run_id=run.pk)
        return response

    return post


def altered(execution) -> None:
    tamper(
        "UPDATE executions_execution SET output_data = %s WHERE id = %s",
        ['{"status_code": 200, "data": "forged"}', execution.pk],
    )


def test_the_index_shows_that_the_log_was_never_verified_with_a_verify_now_button(reviewer_user):
    page = client_for(reviewer_user).get(reverse("admin:index")).content.decode()
    assert 'id="integrity-panel"' in page
    assert "Never verified from the admin" in page
    assert 'id="verify-now"' in page
    assert "Chain head now" in page


def test_a_person_who_may_not_read_the_audit_log_sees_no_panel(approver_user):
    approver_user.is_staff = True
    approver_user.save()
    page = client_for(approver_user).get(reverse("admin:index")).content.decode()
    assert 'id="integrity-panel"' not in page


@pytest.mark.django_db(transaction=True)
def test_verify_now_passes_an_untouched_log_and_audits_its_result(done, reviewer_user):
    client = client_for(reviewer_user)
    response = client.post(VERIFY, {"next": reverse("admin:index")})
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
    run = VerificationRun.objects.get()
    assert run.status == "passed" and run.checked > 0
    assert run.requested_by_name == reviewer_user.username
    event = AuditEvent.objects.get(action="audit.verified")
    assert event.actor_name == reviewer_user.username
    assert event.after["status"] == "passed" and event.after["records_flagged"] == 0
    assert event.target_id == str(run.pk)
    page = client.get(reverse("admin:index")).content.decode()
    assert "Passed" in page and f"event #{run.head_sequence}" in page
    assert "Verified: the audit log is intact" in page  # the message, once, after the redirect
    assert (
        "Verified: the audit log is intact"
        not in client.get(reverse("admin:index")).content.decode()
    )


def test_verify_now_flags_an_altered_execution_on_its_page_and_in_the_list(
    done, reviewer_user, verify
):
    client = client_for(reviewer_user)
    page_url = reverse("admin:executions_execution_change", args=[done.pk])
    assert 'id="integrity-altered"' not in client.get(page_url).content.decode()
    altered(done)
    verify(client)
    run = VerificationRun.objects.get()
    assert run.status == "failed" and run.problem_kind == "record_altered"
    finding = VerificationFinding.objects.get(run=run)
    assert (finding.target_type, finding.target_id) == ("executions.execution", str(done.pk))
    assert AuditEvent.objects.get(action="audit.verified").after["status"] == "failed"

    page = client.get(page_url).content.decode()
    assert 'id="integrity-altered"' in page and "Altered." in page
    listed = client.get(reverse("admin:executions_execution_changelist") + "?integrity=altered")
    assert str(done.pk)[:8] in listed.content.decode()
    index = client.get(reverse("admin:index")).content.decode()
    assert "FAILED" in index and str(done.pk) in index


def test_the_flag_follows_the_latest_run(done, reviewer_user, verify):
    client = client_for(reviewer_user)
    original = Execution.objects.filter(pk=done.pk).values_list("output_data", flat=True).get()
    altered(done)
    verify(client)
    assert VerificationRun.objects.get().status == "failed"
    tamper(
        "UPDATE executions_execution SET output_data = %s WHERE id = %s",
        [json.dumps(original), done.pk],
    )
    verify(client)  # the record put back: the next run passes and nothing is flagged
    assert VerificationRun.objects.order_by("-id").first().status == "passed"
    listed = client.get(reverse("admin:executions_execution_changelist") + "?integrity=altered")
    assert str(done.pk)[:8] not in listed.content.decode()
    page = client.get(reverse("admin:executions_execution_change", args=[done.pk]))
    assert 'id="integrity-altered"' not in page.content.decode()


def test_an_altered_audit_event_is_flagged_on_its_page(done, reviewer_user, verify):
    event = AuditEvent.objects.filter(target_id=str(done.pk)).order_by("id").first()
    tamper("UPDATE registry_auditevent SET actor_name = 'mallory' WHERE id = %s", [event.pk])
    client = client_for(reviewer_user)
    verify(client)
    run = VerificationRun.objects.get()
    assert run.status == "failed" and run.problem_kind == "altered"
    page = client.get(reverse("admin:registry_auditevent_change", args=[event.pk])).content.decode()
    assert 'id="integrity-altered"' in page
    listed = client.get(reverse("admin:registry_auditevent_changelist") + "?integrity=altered")
    assert f">{event.pk}<" in listed.content.decode()


def test_verify_now_is_refused_to_people_who_are_not_reviewers_or_platform_admins(
    approver_user, db
):
    with pytest.raises(PermissionDenied):
        verification_request(actor=approver_user)
    approver_user.is_staff = True
    approver_user.save()
    response = client_for(approver_user).post(VERIFY, {"next": "https://evil.example/"})
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:registry_auditevent_changelist")
    assert not VerificationRun.objects.exists()


def test_verify_now_answers_get_with_405(reviewer_user):
    assert client_for(reviewer_user).get(VERIFY).status_code == 405


def test_a_run_is_done_once(done, reviewer_user):
    run = VerificationRun.objects.create(requested_by_name="x")
    assert verification_run(run_id=run.pk) is not None
    assert verification_run(run_id=run.pk) is None
    assert AuditEvent.objects.filter(action="audit.verified").count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_verify_now_runs_in_a_real_worker(upstream, allow_loopback, reviewer_user):
    caller = echo_caller(upstream, "integrity-w", "echo_integrity_w")
    with celery_worker():
        execution = execution_request(
            user=caller["agent"].user,
            tool_ref="echo_integrity_w",
            arguments={"path": "echo"},
            wait=True,
        )
        assert execution.status == "succeeded"
        altered(execution)
        client = client_for(reviewer_user)
        response = client.post(VERIFY)
        assert response.status_code == 302
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            run = VerificationRun.objects.get()
            if run.status not in ("queued", "running"):
                break
            time.sleep(0.2)
    assert run.status == "failed"
    assert run.findings.filter(target_id=str(execution.pk)).exists()
    assert AuditEvent.objects.filter(action="audit.verified").exists()
