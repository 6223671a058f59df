"""Single-row INSERT and guarded UPDATE without compiling SQL on every call.

The execution path writes the same rows in the same shape on every call (an
Execution, its audit events, the final UPDATE). Django's ORM compiles each
statement from scratch: on the governed-call benchmark that was about a
quarter of the web process's CPU. ``RowWriter`` builds the statement once per
model (and, for updates, per set of columns) and per database vendor, then
converts values exactly as the ORM does (``Field.pre_save`` and
``Field.get_db_prep_save``), so what lands in the row is identical
(tests/test_rows.py compares both ways).

Not for general use: model ``save()`` overrides and ``pre_save``/``post_save``
signals do not run, so it is only used for models that have neither
(``Execution`` and ``AuditEvent``; the test checks that too).

On PostgreSQL the statements run on the backend's ``bound_cursor()``: values are
bound on the server and each statement is prepared once per connection
(``toolhub/db/postgresql/base.py``), instead of being quoted into the SQL text
by Python and parsed and planned again by PostgreSQL on every call. That cursor
is psycopg's ``RawCursor``: the text carries PostgreSQL's own ``$n`` placeholders
(``numbered()``, once per statement shape), so psycopg does not parse it on
every call either (its parse cache stops at 50 parameters; the Execution + audit
INSERT has 54). Why this exists and what it costs: docs/decisions/0001-rowwriter.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Any

from django.db import connections, models, transaction

_PLACEHOLDER = re.compile(r"%([s%])")
# Each statement's text with PostgreSQL's own $n placeholders, by its text with %s
# ones: a handful of fixed shapes (per model, and per set of updated columns).
_numbered: dict[str, str] = {}


def numbered(sql: str) -> str:
    """``sql`` with each ``%s`` as ``$1``, ``$2``… in order and ``%%`` as ``%``: the
    text a bound cursor sends as written (converted once per statement shape)."""
    text = _numbered.get(sql)
    if text is None:
        count = iter(range(1, sql.count("%s") + 1))
        text = _PLACEHOLDER.sub(lambda m: f"${next(count)}" if m[1] == "s" else "%", sql)
        _numbered[sql] = text
    return text


@contextmanager
def _executing(connection, sql: str, params: list):
    """Run ``sql`` (``%s`` placeholders) and yield its cursor: on the backend's
    ``bound_cursor()`` when it has one (ToolHub's PostgreSQL backend: server-side
    binding, ``$n`` placeholders, prepared once per connection), else on Django's
    usual cursor."""
    bound = getattr(connection, "bound_cursor", None)
    if bound is None:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            yield cursor
        return
    with bound() as cursor:
        cursor.execute(numbered(sql), params)
        yield cursor


def _cast(field, connection) -> str:
    """The type a bound value is cast to where the statement gives it no column to
    take its type from (a SELECT list). Without the length or precision: a cast to
    ``varchar(64)`` would cut a longer value silently, where the column refuses it."""
    return re.sub(r"\(.*\)", "", field.cast_db_type(connection)).strip()


def can_combine(using: str = "default") -> bool:
    """Can two writes go to the database as one statement (data-modifying CTEs)?"""
    return connections[using].vendor == "postgresql"


def insert_together(first: models.Model, then: models.Model, using: str = "default") -> None:
    """INSERT two rows atomically. On PostgreSQL one statement (one round trip, and in
    autocommit one commit); elsewhere a transaction. ``first``'s primary key must be
    set; ``then`` may have a generated one, which is read back."""
    if not can_combine(using):
        with transaction.atomic(using=using):
            writer_for(type(first)).insert(first, using)
            writer_for(type(then)).insert(then, using)
        return
    connection = connections[using]
    a_sql, a_params, a_generated = writer_for(type(first))._insert_statement(first, connection)
    b_sql, b_params, b_generated = writer_for(type(then))._insert_statement(then, connection)
    if a_generated:
        raise ValueError("insert_together: the first row needs its primary key set")
    sql = f"WITH first_row AS ({a_sql}) {b_sql}"
    with _executing(connection, sql, a_params + b_params) as cursor:
        if b_generated:
            then.pk = cursor.fetchone()[0]
    _saved(first, using)
    _saved(then, using)


def update_then_insert(
    model: type[models.Model],
    pk: Any,
    values: dict[str, Any],
    *,
    where: dict[str, Any],
    then: models.Model,
    using: str = "default",
) -> bool:
    """``UPDATE model … WHERE pk AND where`` and, only if a row changed, INSERT ``then``,
    atomically: one statement on PostgreSQL, a transaction elsewhere. Returns whether
    the update happened."""
    writer = writer_for(model)
    if not can_combine(using):
        with transaction.atomic(using=using):
            if not writer.update(pk, values, where=where, using=using):
                return False
            writer_for(type(then)).insert(then, using)
        return True
    connection = connections[using]
    update_sql, update_params = writer._update_statement(connection, pk, values, where)
    then_writer = writer_for(type(then))
    b_fields, b_sql, b_generated = then_writer._insert_plan(connection)
    key = (update_sql, type(then))
    sql = _combined.get(key)
    if sql is None:
        head, _, _ = b_sql.partition(" VALUES ")
        # A SELECT list gives bound values no column type: each is cast to its column's.
        marks = ", ".join(f"%s::{_cast(f, connection)}" for f in b_fields)
        returning = f" RETURNING {connection.ops.quote_name(then._meta.pk.column)}"
        # Built from the plans (quoted identifiers); values are bound.
        sql = f"WITH changed AS ({update_sql} RETURNING 1) {head} SELECT {marks}"
        sql += f" WHERE EXISTS (SELECT 1 FROM changed){returning}"  # noqa: S608
        _combined[key] = sql
    params = update_params + _insert_values(then, b_fields, connection)
    with _executing(connection, sql, params) as cursor:
        row = cursor.fetchone()
    if row is None:
        return False
    if b_generated:
        then.pk = row[0]
    _saved(then, using)
    return True


def _saved(obj: models.Model, using: str) -> None:
    """Mark ``obj`` as a row of database ``using``, as ``save()`` leaves it."""
    obj._state.adding = False
    obj._state.db = using


def _insert_values(obj: models.Model, fields: list, connection) -> list:
    """Each field's database value, as ``save()`` prepares it for an INSERT, except
    that an ``auto_now_add`` time already set on the object is kept (so a record
    built before the write, such as its audit event, can state it)."""
    values = []
    for f in fields:
        if getattr(f, "auto_now_add", False) and getattr(obj, f.attname) is not None:
            value = getattr(obj, f.attname)
        else:
            value = f.pre_save(obj, True)
        values.append(f.get_db_prep_save(value, connection))
    return values


# The models written this way (by label): no save signal may be connected to them.
ROW_WRITTEN_MODELS = frozenset({"executions.Execution", "registry.AuditEvent"})

_writers: dict[type, RowWriter] = {}
# update_then_insert's statements, by their UPDATE's text (which names the table and
# columns) and the inserted model's.
_combined: dict[tuple[str, type], str] = {}


def writer_for(model: type[models.Model]) -> RowWriter:
    """The process's one writer for ``model`` (statements are built once per model)."""
    writer = _writers.get(model)
    if writer is None:
        writer = _writers[model] = RowWriter(model)
    return writer


class RowWriter:
    def __init__(self, model: type[models.Model]) -> None:
        self.model = model
        self._inserts: dict[str, tuple[list, str, bool]] = {}
        self._updates: dict[tuple, tuple[list, str, list]] = {}

    def _insert_plan(self, connection) -> tuple[list, str, bool]:
        plan = self._inserts.get(connection.vendor)
        if plan is None:
            meta = self.model._meta
            qn = connection.ops.quote_name
            generated = bool(getattr(meta.pk, "db_returning", False))  # an AutoField pk
            fields = [f for f in meta.concrete_fields if not (generated and f is meta.pk)]
            # Identifiers come from the model's metadata, quoted; values are bound.
            columns = ", ".join(qn(f.column) for f in fields)
            marks = ", ".join(["%s"] * len(fields))
            sql = f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES ({marks})"  # noqa: S608
            if generated:
                sql += f" RETURNING {qn(meta.pk.column)}"
            plan = self._inserts[connection.vendor] = (fields, sql, generated)
        return plan

    def _insert_statement(self, obj: models.Model, connection) -> tuple[str, list, bool]:
        fields, sql, generated = self._insert_plan(connection)
        return sql, _insert_values(obj, fields, connection), generated

    def insert(self, obj: models.Model, using: str = "default") -> models.Model:
        """INSERT ``obj`` as one row (auto_now_add and defaults applied as ``save()`` would)."""
        connection = connections[using]
        sql, values, generated = self._insert_statement(obj, connection)
        with _executing(connection, sql, values) as cursor:
            if generated:
                obj.pk = cursor.fetchone()[0]
        _saved(obj, using)
        return obj

    def update(
        self,
        pk: Any,
        values: dict[str, Any],
        *,
        where: dict[str, Any] | None = None,
        using: str = "default",
    ) -> int:
        """``UPDATE … SET values WHERE pk = pk AND where…``; returns the rows changed (0 or 1)."""
        connection = connections[using]
        sql, params = self._update_statement(connection, pk, values, where or {})
        with _executing(connection, sql, params) as cursor:
            return cursor.rowcount

    def _update_statement(
        self, connection, pk: Any, values: dict[str, Any], where: dict[str, Any]
    ) -> tuple[str, list]:
        key = (connection.vendor, tuple(values), tuple(where))
        plan = self._updates.get(key)
        if plan is None:
            plan = self._updates[key] = self._update_plan(connection, values, where)
        set_fields, sql, where_fields = plan
        params = [f.get_db_prep_save(values[f.name], connection) for f in set_fields]
        params.append(self.model._meta.pk.get_db_prep_value(pk, connection))
        params.extend(f.get_db_prep_value(where[f.name], connection) for f in where_fields)
        return sql, params

    def _update_plan(self, connection, values: Iterable[str], where: Iterable[str]):
        meta = self.model._meta
        qn = connection.ops.quote_name
        set_fields = [meta.get_field(name) for name in values]
        where_fields = [meta.get_field(name) for name in where]
        # Identifiers come from the model's metadata, quoted; values are bound.
        assignments = ", ".join(f"{qn(f.column)} = %s" for f in set_fields)
        conditions = "".join(f" AND {qn(f.column)} = %s" for f in where_fields)
        sql = f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"  # noqa: S608
        sql += conditions
        return set_fields, sql, where_fields
