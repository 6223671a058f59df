"""What the benchmarks share: paths, the processes they start, PostgreSQL, the machine.

The entry scripts in ``bench/`` run with ``bench/`` first on ``sys.path`` (as
``python bench/SCRIPT.py`` does), so this package is imported as ``harness``.
"""

from __future__ import annotations

from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent


def rsa_private_key() -> str:
    """A throwaway RSA key (PEM) for ToolHub's TOOLHUB_OIDC_RSA_PRIVATE_KEY, which DEBUG
    off requires (it signs OpenID Connect ID tokens; no benchmark asks for one)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
