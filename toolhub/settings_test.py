"""Test settings: the real settings, with a fast password hasher.

The database and Redis come from the environment like in production; the test
command (scripts/test) points them at the local PostgreSQL and Redis. Keys
below are throwaway values for the test run only.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
os.environ.setdefault("TOOLHUB_AUDIT_SIGNING_KEY", "test-only-audit-signing-key-not-for-production")
os.environ.setdefault("TOOLHUB_ENCRYPTION_KEYS", "dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=")


def _oidc_key_of_this_test_run() -> None:
    """The RSA key that signs ID tokens: made once per test process (none is kept in the
    repository) and set in the environment, so the servers and workers a test starts
    sign and serve the same key."""
    if os.environ.get("TOOLHUB_OIDC_RSA_PRIVATE_KEY") or os.environ.get(
        "TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE"
    ):
        return
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    os.environ["TOOLHUB_OIDC_RSA_PRIVATE_KEY"] = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


_oidc_key_of_this_test_run()


def _redis_url_of_this_test_worker() -> None:
    """Under pytest-xdist, each worker process (``gw0``, ``gw1``, ...) gets a Redis database of
    its own, below the one configured: the cache, the Celery broker and MCP sessions live
    there, so workers never take each other's tasks or clear each other's keys (the test
    databases are suffixed per worker by pytest-django). Set once, in the environment, so the
    Celery workers and servers a test starts inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = os.environ.get("REDIS_URL", "")
    if not (worker.startswith("gw") and url) or os.environ.get("TOOLHUB_TEST_REDIS_WORKER"):
        return
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    db = (base - 1 - int(worker[2:])) % 16
    os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{db}"))
    os.environ["TOOLHUB_TEST_REDIS_WORKER"] = worker


_redis_url_of_this_test_worker()

from toolhub.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# No collectstatic manifest in tests: serve static names as they are.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

if DATABASES["default"]["ENGINE"] == "toolhub.db.postgresql":  # noqa: F405
    # A test database is thrown away: its commits need not wait for the disk. Every
    # transactional test commits and truncates the tables after it, so this is most of the
    # time those tests spend in PostgreSQL. (Per session, for this role's connections only.)
    _options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()
    # The same backend, but a flush deletes rows instead of truncating files (tests/postgresql).
    DATABASES["default"]["ENGINE"] = "tests.postgresql"  # noqa: F405
