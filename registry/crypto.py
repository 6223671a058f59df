"""Encryption of secret values at rest (Fernet, rotatable with MultiFernet).

``TOOLHUB_ENCRYPTION_KEYS`` lists Fernet keys; the first encrypts, every key
decrypts. To rotate: put a new key first, run
``manage.py rotate_encryption_keys``, then drop the old key.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from toolhub import text

MASK = "********"


class SecretUnreadable(Exception):
    """The ciphertext was made with a key that is no longer configured."""


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.TOOLHUB_ENCRYPTION_KEYS))


def encrypt_json(value: Any, *, field: str = "value") -> str:
    """``value`` encrypted. Text no record can hold is refused here, naming ``field``:
    once encrypted, no check at save could see it."""
    text.refuse_unstorable({field: value})
    return fernet().encrypt(json.dumps(value).encode()).decode()


def decrypt_json(token: str) -> Any:
    try:
        return json.loads(fernet().decrypt(token.encode()))
    except InvalidToken as exc:
        raise SecretUnreadable(
            "A secret cannot be decrypted with the configured TOOLHUB_ENCRYPTION_KEYS."
        ) from exc


def rotate(token: str) -> str:
    """Re-encrypt ``token`` under the primary key."""
    try:
        return fernet().rotate(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("A secret cannot be decrypted with any configured key.") from exc
