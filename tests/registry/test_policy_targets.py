"""What a tool runs, as the policy reads it: the keys each executor declares ``target``,
the parameters those keys name, the names and marks importers and syncs go by, and the
controls over an agent's own calls that are not approval, guards or rate limits."""

from __future__ import annotations

import pytest

from registry import policy
from registry.models import Tool
from registry.services import tools as tool_services
from tests.registry.test_policy import _agent, _manage
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor(owner):
    return _agent(owner, "target-editor", rights=["edit_tools", "register_tools"])


def _http(role, name="target_http", **fields):
    tool = tool_services.tool_create(
        actor=None,
        name=name,
        type="http",
        parameters=[{"name": "item_id", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": "https://api.example"},
            {"config_key": "endpoint", "config_value": "/items/{item_id}"},
            {"config_key": "timeout_seconds", "config_value": 10},
        ],
        **fields,
    )
    _manage(role, tool)
    return tool


def test_each_executors_target_keys_are_what_the_policy_holds_for_platform_admins():
    assert {"base_url", "endpoint", "method"} <= policy.target_configs("http")
    assert {"connection_string", "connection_alias", "query_template", "read_only"} <= (
        policy.target_configs("database")
    )
    assert {"server", "server_id", "remote_tool_name"} <= policy.target_configs("mcp")
    assert "function" in policy.target_configs("python")
    assert {"argv", "env", "stdin"} <= policy.target_configs("command")
    assert not {"timeout_seconds", "headers", "max_rows"} & (
        policy.target_configs("http") | policy.target_configs("database")
    )


def test_a_manager_cannot_turn_a_get_into_a_delete(editor):
    role, user = editor
    tool = _http(role)
    with pytest.raises(PermissionDenied):
        tool_services.config_set(actor=user, tool=tool, config_key="method", config_value="DELETE")
    tool_services.config_set(actor=user, tool=tool, config_key="timeout_seconds", config_value=5)


def test_a_manager_cannot_rename_the_parameter_a_url_names(editor):
    role, user = editor
    tool = _http(role)
    parameter = tool.parameters.get(name="item_id")
    with pytest.raises(PermissionDenied):
        tool_services.parameter_update(actor=user, parameter=parameter, data={"name": "other"})
    # A parameter no "what runs" config names stays the manager's.
    tool_services.parameter_create(actor=user, tool=tool, name="note")


def test_a_registrar_cannot_create_a_tool_that_passes_for_an_imported_one(editor):
    _, user = editor
    with pytest.raises(PermissionDenied):
        tool_services.tool_create(actor=user, name="payments__refund", type="http")
    with pytest.raises(PermissionDenied):
        tool_services.tool_create(
            actor=user,
            name="plain_refund",
            type="http",
            tool_metadata={"openapi_namespace": "payments", "openapi_operation": "POST /refunds"},
        )
    assert not Tool.objects.filter(name__in=["payments__refund", "plain_refund"]).exists()


def test_renaming_a_tool_takes_the_right_to_register_one(owner):
    role, user = _agent(owner, "renamer", rights=["edit_tools"])
    tool = _http(role, name="renamed_http")
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=user, tool=tool, data={"name": "crm_lookup"})
    tool_services.tool_update(actor=user, tool=tool, data={"description": "still mine"})


def test_a_manager_cannot_rename_a_python_tool_into_another_function(editor):
    role, user = editor
    tool = tool_services.tool_create(actor=None, name="calc_py", type="python")
    _manage(role, tool)
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=user, tool=tool, data={"name": "unit_convert"})


def test_an_agent_cannot_raise_or_clear_the_concurrency_bound_on_its_own_calls(editor):
    role, user = editor
    tool = _http(role, name="bounded_http", max_concurrency=2)
    from registry.services import grants as grant_services

    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    for value in (3, None):
        with pytest.raises(PermissionDenied):
            tool_services.tool_update(actor=user, tool=tool, data={"max_concurrency": value})
    tool_services.tool_update(actor=user, tool=tool, data={"max_concurrency": 1})
    assert Tool.objects.get(pk=tool.pk).max_concurrency == 1


def test_retrying_an_approved_call_more_often_takes_a_platform_admin(editor):
    role, user = editor
    tool = _http(role, name="approved_http", requires_approval=True)
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=user, tool=tool, data={"max_retries": 3})
    assert Tool.objects.get(pk=tool.pk).max_retries == 0
