"""Turn Django model validation into the domain's field-naming error."""

from __future__ import annotations

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from toolhub.exceptions import InvalidInput


def details_from_validation_error(exc: ValidationError, prefix: str = "") -> list[dict]:
    details = []
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            name = None if field == NON_FIELD_ERRORS else field
            if prefix:
                name = f"{prefix}.{name}" if name else prefix
            for message in errors:
                details.append({"field": name, "message": message, "code": "invalid"})
    else:
        for message in exc.messages:
            details.append({"field": prefix or None, "message": message, "code": "invalid"})
    return details


def raise_invalid(details: list[dict]) -> None:
    named = ", ".join(
        f"{d['field']}: {d['message']}" if d["field"] else d["message"] for d in details
    )
    raise InvalidInput(f"Invalid input. {named}", details=details)


def full_clean(instance, *, exclude=None, prefix: str = "") -> None:
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise_invalid(details_from_validation_error(exc, prefix))
