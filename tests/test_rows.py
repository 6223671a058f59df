"""RowWriter writes exactly the row the ORM would, for the models that use it."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db.models import signals
from django.utils import timezone

from executions.models import Execution
from registry.models import AuditEvent
from registry.services import tools as tool_services
from tests.factories import make_user
from toolhub.rows import RowWriter

pytestmark = [pytest.mark.django_db]

SKIP = {"id", "created_at", "occurred_at"}


def as_row(model, pk) -> dict:
    row = model.objects.filter(pk=pk).values().get()
    return {k: v for k, v in row.items() if k not in SKIP}


def execution_fields():
    user = make_user(f"rows-{uuid.uuid4().hex[:6]}")
    tool = tool_services.tool_create(actor=None, name=f"rows_{uuid.uuid4().hex[:6]}", type="http")
    return {
        "tool": tool,
        "tool_name": tool.name,
        "principal": user,
        "principal_name": "rows",
        "status": "running",
        "roles_used": ["a", "b"],
        "input_data": {"x": 1, "nested": {"y": [1, 2.5, None, "ü"]}},
        "input_hash": "0" * 64,
        "cost": Decimal("0.0025"),
        "queued_at": timezone.now(),
        "started_at": timezone.now(),
        "request_id": "req",
        "client_address": "127.0.0.1",
    }


def test_nobody_listens_to_saves_of_the_models_written_this_way():
    for model in (Execution, AuditEvent):
        for signal in (signals.pre_save, signals.post_save):
            assert not signal.has_listeners(model), (model, signal)


def test_an_execution_insert_equals_the_orm_one():
    fields = execution_fields()
    by_orm = Execution.objects.create(**fields)
    direct = RowWriter(Execution).insert(Execution(**fields))
    assert direct.pk != by_orm.pk and direct.created_at is not None
    assert as_row(Execution, direct.pk) == as_row(Execution, by_orm.pk)
    assert not direct._state.adding


def test_an_audit_insert_equals_the_orm_one_and_gets_its_id():
    user = make_user("rows-actor")
    fields = {
        "actor": user,
        "actor_name": "rows-actor",
        "action": "x.done",
        "target_type": "t",
        "target_id": "1",
        "after": {"k": [1, {"z": None}]},
        "before": None,
    }
    by_orm = AuditEvent.objects.create(**fields)
    direct = RowWriter(AuditEvent).insert(AuditEvent(**fields))
    assert isinstance(direct.pk, int) and direct.pk > by_orm.pk
    assert as_row(AuditEvent, direct.pk) == as_row(AuditEvent, by_orm.pk)


def test_a_guarded_update_changes_only_a_matching_row():
    fields = execution_fields()
    one = Execution.objects.create(**fields)
    two = Execution.objects.create(**fields)
    changes = {
        "status": "succeeded",
        "output_data": {"status_code": 200, "data": [1, "ü"]},
        "execution_time_ms": 1.5,
        "finished_at": timezone.now(),
        "sealed_secrets": "",
    }
    writer = RowWriter(Execution)
    assert writer.update(one.pk, changes, where={"status": "queued"}) == 0
    assert writer.update(one.pk, changes, where={"status": "running"}) == 1
    Execution.objects.filter(pk=two.pk, status="running").update(**changes)
    assert as_row(Execution, one.pk) == as_row(Execution, two.pk)
    three = Execution.objects.create(**{**fields, "output_data": {"a": 1}})
    assert writer.update(three.pk, {"output_data": None}) == 1  # SQL NULL, as the ORM does
    assert Execution.objects.filter(pk=three.pk, output_data__isnull=True).exists()
