"""Guards for all tools run for every executor kind and every entry point.

An all-tools PII guard and an operator's all-tools guard redact the output of
an http tool and of a Python tool run by a real Celery worker (whose process
loads the operator's modules from its environment); the admin's test run
meets the same before-guards as the API.
"""

from __future__ import annotations

import sys

import pytest
from django.test import Client
from django.urls import reverse

from executions.guards import guard_registry
from executions.models import Execution
from executions.python_sync import python_tools_sync
from executions.python_tools import registry as tool_registry
from registry.models import Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.workers import celery_worker

OPERATOR_MODULE = "tests.data.sample_guards"


@pytest.fixture
def operator_module():
    from executions.apps import load_operator_modules

    load_operator_modules([OPERATOR_MODULE], "TOOLHUB_GUARD_MODULES")
    yield
    for name in (
        "sample_no_system_paths",
        "sample_codewords",
        "sample_broken_before",
        "sample_broken_after",
    ):
        guard_registry.unregister(name)
    tool_registry.unregister("sample_say")
    sys.modules.pop(OPERATOR_MODULE, None)


def _guards_for_all_tools():
    guard_services.guard_create(actor=None, name="pii-everywhere", kind="pii", action="redact")
    guard_services.guard_create(
        actor=None,
        name="codewords-everywhere",
        kind="python",
        action="redact",
        order=200,
        config={"function": "sample_codewords"},
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_guard_for_all_tools_guards_http_and_python_tools_run_by_a_worker(
    operator_module, upstream, allow_loopback, owner
):
    python_tools_sync(actor=None)
    python_tool = Tool.objects.get(name="sample_say")
    http_tool = tool_services.tool_create(
        actor=None,
        name="say_over_http",
        type="http",
        timeout_seconds=5,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "body", "type": "string"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
        ],
    )
    role = role_services.role_create(actor=None, name="everywhere-callers")
    for tool in (python_tool, http_tool):
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    agent = agent_services.agent_create(
        actor=None, name="everywhere-agent", owner=owner, role_ids=[role.pk]
    )
    client = token_client(agent.user)
    _guards_for_all_tools()
    said = "mail ann@example.com, the word is swordfish"
    expected = "mail [REDACTED:email], the word is [REDACTED:codeword]"
    env = {"TOOLHUB_PYTHON_TOOL_MODULES": OPERATOR_MODULE, "TOOLHUB_GUARD_MODULES": OPERATOR_MODULE}
    with celery_worker(extra_env=env):
        by_python = client.post(
            "/api/v1/executions",
            {"tool": "sample_say", "input_data": {"text": said}, "wait": 30},
            format="json",
        ).json()
        by_http = client.post(
            "/api/v1/executions",
            {"tool": "say_over_http", "input_data": {"path": "text", "body": said}, "wait": 30},
            format="json",
        ).json()
    assert by_python["status"] == by_http["status"] == "succeeded"
    assert Execution.objects.get(pk=by_python["id"]).worker  # a worker ran both
    assert Execution.objects.get(pk=by_http["id"]).worker
    assert expected in str(by_python["output_data"])
    assert by_http["output_data"]["data"] == expected
    for answer in (by_python, by_http):
        assert [(d["guard"], d["action"]) for d in answer["guard_decisions"]] == [
            ("pii-everywhere", "redact"),
            ("codewords-everywhere", "redact"),
        ]


@pytest.mark.django_db
def test_the_admin_test_run_meets_the_same_before_guards(staff_user, eager_tasks):
    tool = tool_services.tool_create(
        actor=None,
        name="admin_checked",
        type="http",
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[{"config_key": "base_url", "config_value": "http://127.0.0.1:9"}],
    )
    guard_services.guard_create(
        actor=None,
        name="short-paths",
        kind="arguments",
        action="deny",
        config={"max_string_length": 5},
    )
    client = Client()
    client.force_login(staff_user)
    page = client.post(
        reverse("admin:registry_tool_test_run", args=[tool.pk]),
        {"arguments": '{"path": "much-too-long"}', "wait_seconds": 1},
    )
    assert page.status_code == 200
    assert b"guard_denied" in page.content and b"short-paths" in page.content
    row = Execution.objects.get(tool=tool)
    assert row.status == "denied" and row.reason_code == "guard_denied"
