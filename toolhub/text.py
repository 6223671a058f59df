"""Text no record can hold: NUL characters and unpaired surrogates.

UTF-8 cannot encode an unpaired surrogate (``"\\udfff"``, which JSON can still
write as an escape), and PostgreSQL refuses NUL in text and JSON columns.
Saved anyway (encrypted, as a secret) such text breaks later, at every call
that uses it. So it is refused where it comes in, naming the field:

- JSON text (request bodies, admin JSON fields, arguments given as text):
  ``toolhub.strictjson`` refuses unpaired surrogates as it parses;
- every save of every model (``refuse_unstorable_fields``, connected to
  ``pre_save`` by ``toolhub.apps``): each text and JSON field is checked, so no
  write path (API, admin, importers, commands) can store either. Executions and
  audit events are written without signals (``toolhub.rows``): their text is
  mended where it is recorded (``executions.jsonsafe``);
- secrets, checked before they are encrypted (``registry.crypto``).
"""

from __future__ import annotations

from typing import Any

from django.db import models

from toolhub.exceptions import InvalidInput

MESSAGE = "Text may not contain NUL characters or unpaired surrogates."
CODE = "unencodable_text"


def is_encodable_text(text: str) -> bool:
    """No unpaired surrogate: UTF-8 can encode it."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_storable_text(text: str) -> bool:
    """No NUL character and no unpaired surrogate: any record can hold it."""
    return "\x00" not in text and is_encodable_text(text)


def shown(text: str) -> str:
    """``text`` as an error may quote it: U+FFFD for each NUL and unpaired surrogate."""
    return "".join("\ufffd" if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def unstorable_path(value: Any, path: str = "", *, ok=is_storable_text) -> str | None:
    """Where ``value`` holds text no record can hold (in a string or an object's key):
    ``path`` followed by the keys and indexes leading there; None when nowhere.
    ``ok`` tells good text (``is_encodable_text``: only unpaired surrogates are
    looked for). Walks without recursion, so any depth is safe."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not ok(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{where}.{shown(str(key))}" if where else shown(str(key))
                if isinstance(key, str) and not ok(key):
                    return name
                stack.append((child, name))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


def refuse_unstorable(values: dict[str, Any], prefix: str = "") -> None:
    """Raise ``InvalidInput`` naming each field of ``values`` (``prefix.field.path``)
    that holds text no record can hold."""
    details = []
    for field, value in values.items():
        where = unstorable_path(value, field)
        if where is not None:
            name = f"{prefix}.{where}" if prefix else where
            details.append({"field": name, "message": MESSAGE, "code": CODE})
    if details:
        named = ", ".join(f"{d['field']}: {d['message']}" for d in details)
        raise InvalidInput(f"Invalid input. {named}", details=details)


_TEXT_FIELDS = (models.CharField, models.TextField, models.JSONField)


def refuse_unstorable_fields(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    """``pre_save``: refuse a row whose text or JSON fields hold text no record can hold."""
    if raw:
        return
    refuse_unstorable(
        {
            field.name: field.value_from_object(instance)
            for field in sender._meta.concrete_fields
            if isinstance(field, _TEXT_FIELDS)
            and (update_fields is None or field.name in update_fields)
        }
    )
