"""The verification runs behind the admin's integrity panel are written forward only:
the application's database role cannot edit a finished run or its findings."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from registry.models import VerificationFinding, VerificationRun
from registry.services.verification_runs import verification_run
from tests.factories import make_user

from .test_audit_chain import PG, tamper, write_events
from .test_audit_chain_forgery import APP_LOGIN, app_login  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed_run():
    """A finished run that found an altered event (and flags it)."""
    write_events(3)
    tamper("UPDATE registry_auditevent SET action = 'forged' WHERE sequence = 2")
    run = VerificationRun.objects.create(
        requested_by=make_user("rita-asks"), requested_by_name="rita-asks"
    )
    verification_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.findings.count() == 1
    return run


def _finding_delete(run):
    VerificationFinding.objects.filter(run=run).delete()


EDITS = {
    "run_passed": lambda run: VerificationRun.objects.filter(pk=run.pk).update(
        status="passed", problem_kind="", problem_message=""
    ),
    "run_problem": lambda run: VerificationRun.objects.filter(pk=run.pk).update(
        problem_message="nothing"
    ),
    "run_back_to_running": lambda run: VerificationRun.objects.filter(pk=run.pk).update(
        status="running"
    ),
    "finding_message": lambda run: VerificationFinding.objects.filter(run=run).update(
        target_id="0"
    ),
    "finding_added": lambda run: VerificationFinding.objects.create(
        run=run, kind="record_altered", target_type="executions.execution", message="x"
    ),
    "run_inserted_passed": lambda run: VerificationRun.objects.create(status="passed"),
    # SQLite (embedded) leaves DELETE open: flush empties tables with it.
    "finding_deleted": pytest.param(_finding_delete, marks=PG),
    "run_deleted": pytest.param(lambda run: run.delete(), marks=PG),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_the_app_cannot_edit_a_finished_verification_run_or_its_findings(failed_run, edit):
    with pytest.raises(DatabaseError), transaction.atomic():
        edit(failed_run)
    kept = VerificationRun.objects.get(pk=failed_run.pk)
    assert kept.status == "failed" and kept.problem_message == failed_run.problem_message
    assert list(kept.findings.values_list("target_id", flat=True)) == [
        str(failed_run.findings.get().event_id)
    ]
    assert VerificationRun.objects.count() == 1


def test_deleting_the_person_who_asked_still_clears_the_run_s_link(failed_run):
    failed_run.requested_by.delete()
    kept = VerificationRun.objects.get(pk=failed_run.pk)
    assert kept.requested_by_id is None and kept.requested_by_name == "rita-asks"


@PG
@pytest.mark.django_db(transaction=True)
def test_the_app_login_cannot_mark_a_failed_run_passed(app_login):  # noqa: F811
    import psycopg

    write_events(3)
    tamper("UPDATE registry_auditevent SET action = 'forged' WHERE sequence = 2")
    run = VerificationRun.objects.create(requested_by_name="rita")
    verification_run(run_id=run.pk)
    assert connection.vendor == "postgresql" and APP_LOGIN
    for sql in (
        "UPDATE registry_verificationrun SET status = 'passed' WHERE id = %s",
        "DELETE FROM registry_verificationfinding WHERE run_id = %s",
        "DELETE FROM registry_verificationrun WHERE id = %s",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app_login.execute(sql, [run.pk])
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_login.execute("TRUNCATE registry_verificationrun CASCADE")
    assert VerificationRun.objects.get(pk=run.pk).status == "failed"


def test_a_run_walked_to_passed_behind_the_services_back_does_not_clear_the_flags(failed_run):
    """The moves the database allows, made by hand: no authentic audit.verified event
    vouches for the result, so the panel keeps the run that did."""
    from django.utils import timezone

    from registry.integrity import verification_findings_for, verification_latest

    forged = VerificationRun.objects.create(requested_by_name="someone")
    VerificationRun.objects.filter(pk=forged.pk).update(status="running")
    VerificationRun.objects.filter(pk=forged.pk).update(status="passed", finished_at=timezone.now())
    assert verification_latest() == failed_run
    finding = failed_run.findings.get()
    assert verification_findings_for(finding.target_type, finding.target_id)
