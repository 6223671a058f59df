"""The published OpenAPI document, checked by schemathesis against the live application.

Every documented operation is called with requests generated from the document
(valid ones and ones that break it), as an agent holding an ``execute`` grant
on a few tools and as a platform admin, on a realistic catalog. Each answer must
not be a server error, must have a documented status, content type, headers and
body, a request that breaks the document must be refused and one it allows must
not be. Seeded and bounded, so it runs the same way each time and fits in CI.
"""

from __future__ import annotations

import io
import tomllib
from pathlib import Path

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.core import signals
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from django.test import override_settings
from hypothesis import HealthCheck, settings

from executions.python_sync import python_tools_sync
from registry.models import Agent, Guard, MCPServer, Tool, ToolParameter, Toolset
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.factories import ToolFactory, make_token, make_user
from toolhub.celery import app as celery_app

# Django's WSGI application, as toolhub.wsgi serves it, but without that module's setup of a
# serving process (its bounded connection pool), which would change this test process's
# database settings for every test collected with it.
application = get_wsgi_application()

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
# The longest file of the suite: each principal's half runs in a process of its own
# (tests/conftest.py), each process building the catalog once.
XDIST_SPLIT_BY = "principal"

# Per operation and principal; with the boundary cases of the coverage phase on top.
MAX_EXAMPLES = 3
WSGI_HOST = "localhost"  # the Host schemathesis's WSGI client sends
AGENT_TOOLS = ("text_stats", "unit_convert", "calculator", "african_country_directory")

# Rows the module's catalog holds under fixed ids, so that generated requests reach the
# views' logic (a made-up id is only ever a 404): each path parameter gets one of these,
# or a generated value, deterministically.
KNOWN_IDS = {
    "tool_id": "5c4e7a1d-0000-4000-8000-000000000001",
    "parameter_id": "5c4e7a1d-0000-4000-8000-000000000002",
    "agent_id": "5c4e7a1d-0000-4000-8000-000000000003",
    "guard_id": "5c4e7a1d-0000-4000-8000-000000000004",
    "server_id": "5c4e7a1d-0000-4000-8000-000000000005",
    "toolset_id": "5c4e7a1d-0000-4000-8000-000000000006",
}


def suite_config() -> schemathesis.Config:
    """The repository's schemathesis.toml (what the document cannot state), seeded and
    bounded, with the known rows offered to path parameters."""
    data = tomllib.loads((Path(django_settings.BASE_DIR) / "schemathesis.toml").read_text())
    data["seed"] = 20240601
    data["generation"] = {"mode": "all", "max-examples": MAX_EXAMPLES, "deterministic": True}
    data["phases"] = {"examples": {"enabled": True}, "coverage": {"enabled": True}}
    checks = data.setdefault("checks", {})
    for name in ("status_code_conformance", "response_schema_conformance"):
        checks.setdefault(name, {})["enabled"] = True
    for name, value in KNOWN_IDS.items():
        data["parameters"][f"path.{name}"] = {"dictionary": name, "probability": 0.5}
        data.setdefault("dictionaries", {})[name] = {"values": [value]}
    return schemathesis.Config.from_dict(data)


def known_rows(*, owner) -> None:
    """A tool with a parameter, an agent, a guard, an MCP server and a toolset, at KNOWN_IDS."""
    tool = ToolFactory(id=KNOWN_IDS["tool_id"], name="st_known", type="http")
    ToolParameter.objects.create(id=KNOWN_IDS["parameter_id"], tool=tool, name="text")
    agent = agent_services.agent_create(actor=None, name="st-known", owner=owner)
    Agent.objects.filter(pk=agent.pk).update(id=KNOWN_IDS["agent_id"])
    Guard.objects.create(
        id=KNOWN_IDS["guard_id"], name="st-guard", kind="pii", stage="after", action="redact"
    )
    MCPServer.objects.create(
        id=KNOWN_IDS["server_id"], name="st-upstream", url="http://127.0.0.1:9/mcp"
    )
    Toolset.objects.create(id=KNOWN_IDS["toolset_id"], name="st", slug="st").tools.add(tool)


@pytest.fixture(scope="module")
def tokens(django_db_setup, django_db_blocker) -> dict[str, str]:
    """The catalog, built once for the module inside a transaction rolled back at its end
    (each test runs in a savepoint of it, as under Django's ``setUpTestData``)."""
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("seed_demo", stdout=io.StringIO())
        python_tools_sync(actor=None)
        admin = make_user("st-admin", is_staff=True)
        admin.groups.add(Group.objects.get(name="platform-admin"))
        owner = make_user("st-owner")
        role = role_services.role_create(actor=None, name="st-callers")
        agent = agent_services.agent_create(
            actor=None, name="st-agent", owner=owner, role_ids=[role.pk]
        )
        for tool in Tool.objects.filter(name__in=AGENT_TOOLS):
            grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
        known_rows(owner=owner)
        yield {"agent": make_token(agent.user), "platform_admin": make_token(admin)}
        transaction.set_rollback(True)


@pytest.fixture(params=["agent", "platform_admin"])
def principal(request, tokens) -> str:
    """The bearer token the requests are sent with."""
    return tokens[request.param]


@pytest.fixture(autouse=True)
def _eager_tasks():
    """Executions run in-process, in the test's transaction."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _wsgi_app_in_test_transaction(settings):
    """Requests reach the WSGI handler as under a server, in this test's transaction.

    Like Django's test client: the handler would close the connection (and so
    roll the test's transaction back) at each request's start and end.
    """
    settings.ALLOWED_HOSTS = [WSGI_HOST]
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


with override_settings(ALLOWED_HOSTS=[WSGI_HOST]):
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", application, config=suite_config()
    )


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_as_its_openapi_document_says(case, principal):
    case.call_and_validate(headers={"Authorization": f"Bearer {principal}"})
