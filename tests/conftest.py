"""Shared fixtures: service checks and a fixed cast of principals.

The cast: ``owner`` (owns the agents), ``agent_none``, ``agent_read`` and
``agent_exec`` (agents with no grant, read and execute on every tool),
``manager_user`` and ``approver_user`` (people whose roles a test grants
``manage`` or ``approve`` on its tools), ``reviewer_user`` (compliance),
``staff_user`` (platform admin), ``superuser`` and ``plain_user`` (a person
who reads every tool).

With ``TOOLHUB_TEST_EXPECT_SERVICES=true`` (CI), the suite refuses to run on
anything but PostgreSQL instead of silently falling back.
"""

from __future__ import annotations

import contextlib
import os

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.factories import make_token, make_user

EXPECT_SERVICES = os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"


def pytest_configure(config):
    vendor = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    if EXPECT_SERVICES and "postgresql" not in vendor:
        raise pytest.UsageError(
            "PostgreSQL was expected (CI) but DATABASE_URL does not point at it; refusing SQLite."
        )


# Under pytest-xdist with ``--dist loadgroup`` (scripts/test), a process takes a group of
# tests at a time: by default a test file (as ``--dist loadfile`` would), so a file's module
# fixtures start once; all the tests that use one of these session fixtures (servers
# started once per process), so they start once too; and, in a file that names
# ``XDIST_SPLIT_BY = "<parameter>"``, the file's tests per value of that parameter, so one
# long file runs in several processes at once.
SHARED_SESSION_FIXTURES = ("live_toolhub_web",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    if config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        shared = [name for name in SHARED_SESSION_FIXTURES if name in item.fixturenames]
        group = shared[0] if shared else item.path.relative_to(config.rootpath).as_posix()
        split_by = getattr(item.module, "XDIST_SPLIT_BY", None)
        if split_by and not shared and hasattr(item, "callspec"):
            group += f"[{item.callspec.params[split_by]}]"
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_report_header(config):
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    return [
        f"toolhub: database={engine} cache={cache} eager_tasks={settings.CELERY_TASK_ALWAYS_EAGER}"
    ]


def token_client(user, **token_kwargs) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(user, **token_kwargs)}")
    return client


def make_role(name: str, permissions=(), all_tools_action: str | None = None) -> Group:
    role = role_services.role_create(actor=None, name=name)
    if permissions:
        role.permissions.add(*role_services.permissions_by_label(permissions))
    if all_tools_action:
        grant_services.grant_create(actor=None, role=role, action=all_tools_action)
    return role


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


@pytest.fixture
def platform_admin_role(db) -> Group:
    return make_role(
        "platform-admin", role_services.PLATFORM_ADMIN_PERMISSIONS, all_tools_action="manage"
    )


@pytest.fixture
def reviewer_role(db) -> Group:
    return make_role("reviewer", role_services.REVIEWER_PERMISSIONS, all_tools_action="read")


@pytest.fixture
def staff_user(platform_admin_role):
    """A platform admin: a person in the platform-admin role (staff, so also in the admin)."""
    user = make_user("alice-staff", is_staff=True)
    user.groups.add(platform_admin_role)
    return user


@pytest.fixture
def owner(db):
    """The person who owns the cast's agents."""
    return make_user("owner-olga")


@pytest.fixture
def superuser(db):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def plain_user(db):
    """A person who may read every tool and change nothing."""
    user = make_user("bob-plain")
    user.groups.add(make_role("catalog-readers", all_tools_action="read"))
    return user


@pytest.fixture
def reviewer_user(reviewer_role):
    user = make_user("rita-reviewer", is_staff=True)
    user.groups.add(reviewer_role)
    return user


@pytest.fixture
def approvers_role(db) -> Group:
    """Holds no grant: a test grants ``approve`` on the tools it needs."""
    return make_role("approvers")


@pytest.fixture
def approver_user(approvers_role):
    """A person who decides on the calls of the tools the approvers role may approve."""
    user = make_user("ann-approver", is_staff=True)
    user.groups.add(approvers_role)
    return user


@pytest.fixture
def tool_managers_role(db) -> Group:
    """Holds no grant: a test grants ``manage`` on the tools it needs."""
    return make_role("tool-managers")


@pytest.fixture
def manager_user(tool_managers_role):
    """A person who manages the tools the tool-managers role may manage (no platform rights)."""
    user = make_user("mo-manager")
    user.groups.add(tool_managers_role)
    return user


def make_agent(owner, name: str, all_tools_action: str | None = None):
    role = make_role(f"{name}-role", all_tools_action=all_tools_action)
    return agent_services.agent_create(actor=None, name=name, owner=owner, role_ids=[role.pk])


@pytest.fixture
def agent_none(owner):
    """An agent whose only role grants nothing."""
    return make_agent(owner, "agent-none")


@pytest.fixture
def agent_read(owner):
    """An agent whose role may read every tool."""
    return make_agent(owner, "agent-read", all_tools_action="read")


@pytest.fixture
def agent_exec(owner):
    """An agent whose role may execute every tool."""
    return make_agent(owner, "agent-exec", all_tools_action="execute")


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    return token_client(staff_user)


@pytest.fixture
def plain_client(plain_user) -> APIClient:
    return token_client(plain_user)


@pytest.fixture
def reviewer_client(reviewer_user) -> APIClient:
    return token_client(reviewer_user)


@pytest.fixture(scope="session", autouse=True)
def _empty_redis_database():
    """The test database is created anew each run and its ids start over, so what an earlier
    run left in this run's Redis database (a cached result, an idempotency key under the
    same user id, a queued task) would be taken for this run's: it starts empty."""
    from django.core.cache import cache

    with contextlib.suppress(Exception):  # no cache reachable: nothing left over either
        cache.clear()
    yield


@pytest.fixture(autouse=True)
def _fresh_dashboard_cache():
    """The dashboard caches its aggregates for a minute; each test starts without them."""
    from django.core.cache import cache

    from executions.admin_dashboard import RANGES, dashboard_cache_key

    keys = [dashboard_cache_key(name) for name in RANGES]
    with contextlib.suppress(Exception):  # no cache reachable: nothing cached either
        cache.delete_many(keys)
    yield
