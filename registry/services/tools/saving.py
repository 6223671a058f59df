"""Saving a row and turning the database's unique violation into a conflict."""

from __future__ import annotations

import logging

from django.db import DataError, IntegrityError, transaction

from registry.services.validation import raise_invalid
from toolhub.exceptions import Conflict

logger = logging.getLogger("registry.services.tools")


# SQLSTATE of a unique violation (PostgreSQL); SQLite says so in its message.
_UNIQUE_VIOLATION = "23505"


def _is_unique_violation(exc: IntegrityError) -> bool:
    cause = exc.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code:
        return code == _UNIQUE_VIOLATION
    return "UNIQUE constraint failed" in str(exc)


def _save(instance, conflict_message: str, field: str, prefix: str = "") -> None:
    """Save ``instance``: a unique violation is a 409 naming ``field``; any other refusal a 400.

    The checks before a save should leave the database nothing to refuse; if it
    still does (a constraint, a value its column cannot hold), say so plainly
    rather than calling it a duplicate.
    """
    try:
        with transaction.atomic():
            instance.save()
    except (IntegrityError, DataError) as exc:
        if isinstance(exc, IntegrityError) and _is_unique_violation(exc):
            raise Conflict(
                conflict_message,
                code="duplicate",
                details=[
                    {
                        "field": f"{prefix}.{field}" if prefix else field,
                        "message": "Already in use.",
                        "code": "unique",
                    }
                ],
            ) from exc
        logger.warning("saving a %s was refused: %s", instance._meta.label_lower, exc)
        raise_invalid(
            [
                {
                    "field": prefix or None,
                    "message": f"The database refused this {instance._meta.verbose_name}: one of "
                    "its values cannot be stored (a JSON value with NaN or Infinity, or a "
                    "number beyond its field's range).",
                    "code": "rejected",
                }
            ]
        )
