"""Test settings: the real settings, with a fast password hasher.

The database and Redis come from the environment like in production; the test
command (scripts/test) points them at the local PostgreSQL and Redis. Keys
below are throwaway values for the test run only.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
os.environ.setdefault("TOOLHUB_AUDIT_SIGNING_KEY", "test-only-audit-signing-key-not-for-production")
os.environ.setdefault("TOOLHUB_ENCRYPTION_KEYS", "dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=")

from toolhub.settings import *  # noqa: F403

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
