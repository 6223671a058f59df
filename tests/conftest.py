"""Shared fixtures: service checks and a fixed cast of principals.

With ``TOOLHUB_TEST_EXPECT_SERVICES=true`` (CI), the suite refuses to run on
anything but PostgreSQL and a reachable Redis instead of silently falling back.
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import make_token, make_user

EXPECT_SERVICES = os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"


def pytest_configure(config):
    vendor = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    if EXPECT_SERVICES and "postgresql" not in vendor:
        raise pytest.UsageError(
            "PostgreSQL was expected (CI) but DATABASE_URL does not point at it; refusing SQLite."
        )


def pytest_report_header(config):
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    return [
        f"toolhub: database={engine} cache={cache} eager_tasks={settings.CELERY_TASK_ALWAYS_EAGER}"
    ]


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(user)}")
    return client


@pytest.fixture
def staff_user(db):
    return make_user("alice-staff", is_staff=True)


@pytest.fixture
def superuser(db):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def plain_user(db):
    return make_user("bob-plain")


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    return token_client(staff_user)


@pytest.fixture
def plain_client(plain_user) -> APIClient:
    return token_client(plain_user)
