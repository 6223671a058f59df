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

SKIP = {"id", "created_at", "occurred_at", "uid"}  # uid: random per event


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


def _audit(**extra):
    return AuditEvent(
        actor_name="rows", action="x.done", target_type="t", target_id="1", after={"a": 1}, **extra
    )


@pytest.fixture
def postgresql_only():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("combined writes are PostgreSQL's (data-modifying CTEs)")


def test_insert_together_writes_both_rows_in_one_statement(
    postgresql_only, django_assert_num_queries
):
    from toolhub.rows import insert_together

    execution = Execution(**execution_fields())
    event = _audit()
    with django_assert_num_queries(1):
        insert_together(execution, event)
    assert isinstance(event.pk, int)
    assert Execution.objects.filter(pk=execution.pk).exists()
    assert AuditEvent.objects.get(pk=event.pk).after == {"a": 1}


def test_update_then_insert_writes_the_event_only_when_the_update_happens(postgresql_only):
    from toolhub.rows import update_then_insert

    execution = Execution.objects.create(**execution_fields())
    before = AuditEvent.objects.count()
    changes = {"status": "succeeded", "finished_at": timezone.now()}
    missed = _audit()
    assert not update_then_insert(
        Execution, execution.pk, changes, where={"status": "queued"}, then=missed
    )
    assert missed.pk is None and AuditEvent.objects.count() == before
    written = _audit()
    assert update_then_insert(
        Execution, execution.pk, changes, where={"status": "running"}, then=written
    )
    assert AuditEvent.objects.filter(pk=written.pk).exists()
    assert Execution.objects.get(pk=execution.pk).status == "succeeded"


def test_a_preset_auto_now_add_time_is_kept():
    when = timezone.now().replace(microsecond=0) - timezone.timedelta(seconds=5)
    execution = Execution(**execution_fields(), created_at=when)
    RowWriter(Execution).insert(execution)
    assert Execution.objects.get(pk=execution.pk).created_at == when


def _prepared_statements() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_the_call_path_statements_are_prepared_on_the_connection(postgresql_only):
    """PostgreSQL parses and plans the hot writes once per connection, not per call."""
    from toolhub.rows import insert_together, update_then_insert

    for _ in range(2):
        execution = Execution(**execution_fields())
        insert_together(execution, _audit())
        changes = {"status": "succeeded", "finished_at": timezone.now()}
        assert update_then_insert(
            Execution, execution.pk, changes, where={"status": "running"}, then=_audit()
        )
    prepared = _prepared_statements()
    assert any(
        s.startswith('WITH first_row AS (INSERT INTO "executions_execution"') for s in prepared
    )
    assert any(s.startswith('WITH changed AS (UPDATE "executions_execution"') for s in prepared)


def test_preparing_can_be_turned_off(postgresql_only, settings):
    """TOOLHUB_DB_PREPARE_THRESHOLD applies to each new connection; 0 never prepares."""
    from django.db import connection

    def threshold_of_a_new_connection():
        raw = connection.get_new_connection(connection.get_connection_params())
        try:
            return raw.prepare_threshold
        finally:
            raw.close()

    assert threshold_of_a_new_connection() == 1
    settings.TOOLHUB_DB_PREPARE_THRESHOLD = 0
    assert threshold_of_a_new_connection() is None
    settings.TOOLHUB_DB_PREPARE_THRESHOLD = 5
    assert threshold_of_a_new_connection() == 5


def test_a_value_too_long_for_its_column_is_refused_not_cut(postgresql_only):
    """The combined UPDATE + INSERT casts values in its SELECT list: never to a
    length that would cut them silently."""
    from django.db import DataError, transaction

    from toolhub.rows import update_then_insert

    execution = Execution.objects.create(**execution_fields())
    event = AuditEvent(
        actor_name="x" * 151,  # the column holds 150
        action="x.done",
        target_type="t",
        target_id="1",
        after={},
    )
    with pytest.raises(DataError), transaction.atomic():
        update_then_insert(
            Execution,
            execution.pk,
            {"status": "succeeded"},
            where={"status": "running"},
            then=event,
        )
    assert Execution.objects.get(pk=execution.pk).status == "running"


def test_importing_the_row_writer_leaves_psycopgs_private_modules_as_shipped():
    """No private psycopg setting is patched: its parse cache keeps its own limit."""
    import importlib

    from psycopg import _queries

    import toolhub.rows

    importlib.reload(toolhub.rows)
    assert _queries.MAX_CACHED_STATEMENT_PARAMS == 50


def test_the_combined_insert_is_sent_as_written_with_numbered_placeholders(postgresql_only):
    """The 54-value INSERT reaches PostgreSQL with $n placeholders from a raw cursor
    (no client-side parsing), and the query log still shows its values."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from toolhub.rows import insert_together

    execution = Execution(**execution_fields())
    with CaptureQueriesContext(connection) as captured:
        insert_together(execution, _audit())
    assert Execution.objects.filter(pk=execution.pk).exists()
    logged = captured.captured_queries[0]["sql"]
    assert "$1" not in logged and "%s" not in logged
    assert execution.pk.hex in logged
    insert_together(Execution(**execution_fields()), _audit())  # prepared at its second run
    prepared = [s for s in _prepared_statements() if s.startswith("WITH first_row AS (INSERT")]
    assert prepared and "$54" in prepared[0] and "%s" not in prepared[0]


def test_numbered_placeholders_keep_literal_percent_signs():
    from toolhub.rows import numbered

    assert numbered("SELECT %s, '100%%', %s") == "SELECT $1, '100%', $2"
