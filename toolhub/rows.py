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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connections, models


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

    def insert(self, obj: models.Model, using: str = "default") -> models.Model:
        """INSERT ``obj`` as one row (auto_now_add and defaults applied as ``save()`` would)."""
        connection = connections[using]
        fields, sql, generated = self._insert_plan(connection)
        values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        with connection.cursor() as cursor:
            cursor.execute(sql, values)
            if generated:
                obj.pk = cursor.fetchone()[0]
        obj._state.adding = False
        obj._state.db = using
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
        where = where or {}
        key = (connection.vendor, tuple(values), tuple(where))
        plan = self._updates.get(key)
        if plan is None:
            plan = self._updates[key] = self._update_plan(connection, values, where)
        set_fields, sql, where_fields = plan
        params = [f.get_db_prep_save(values[f.name], connection) for f in set_fields]
        params.append(self.model._meta.pk.get_db_prep_value(pk, connection))
        params.extend(f.get_db_prep_value(where[f.name], connection) for f in where_fields)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount

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
