"""``registry.policy``: what runs is a platform admin's, both the right and the grant are
needed to change a tool, and an agent never loosens a control over its own calls."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from registry.models import Guard, RateLimitRule, Tool, ToolConfig, ToolParameter
from registry.rights import RIGHTS_BY_KEY, permissions_of
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import make_role, token_client
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db


def _agent(owner, name, *, rights=(), permissions=()):
    labels = [*permissions_of(rights), *permissions]
    role = make_role(f"{name}-role", labels)
    agent = agent_services.agent_create(actor=None, name=name, owner=owner, role_ids=[role.pk])
    return role, agent.user


def _manage(role, *tools):
    for tool in tools:
        grant_services.grant_create(actor=None, role=role, action="manage", tool=tool)


@pytest.fixture
def python_tools(db):
    calculator = tool_services.tool_create(
        actor=None, name="calculator", type="python", parameters=[{"name": "expression"}]
    )
    unit_convert = tool_services.tool_create(
        actor=None, name="unit_convert", type="python", requires_approval=True
    )
    return calculator, unit_convert


def function_of(tool) -> str | None:
    config = ToolConfig.objects.filter(tool=tool, config_key="function").first()
    return None if config is None else config.plain_value


def test_every_rule_names_a_known_right_and_says_why_it_refuses():
    from registry.policy import POLICY

    for action, rule in POLICY.items():
        assert rule.right is None or rule.right in RIGHTS_BY_KEY, action
        assert rule.refusal, action


def test_a_python_tool_created_without_a_function_stores_the_one_its_name_says(python_tools):
    calculator, unit_convert = python_tools
    assert function_of(calculator) == "calculator"
    assert function_of(unit_convert) == "unit_convert"


@pytest.mark.parametrize("rights", [(), ("edit_tools",)])
def test_a_manager_cannot_retarget_a_python_tool_to_another_function(owner, python_tools, rights):
    calculator, _ = python_tools
    role, user = _agent(owner, "retargeter", rights=rights)
    _manage(role, calculator)
    client = token_client(user)
    response = client.post(
        f"/api/v1/tools/{calculator.pk}/configs",
        {"config_key": "function", "config_value": "unit_convert"},
        format="json",
    )
    assert response.status_code == 403, response.content
    with pytest.raises(PermissionDenied):
        tool_services.config_set(
            actor=user, tool=calculator, config_key="function", config_value="unit_convert"
        )
    # Removing it (so that a rename would choose the function) is refused too.
    assert client.delete(f"/api/v1/tools/{calculator.pk}/configs/function").status_code == 403
    with pytest.raises(PermissionDenied):
        tool_services.config_delete(
            actor=user, config=calculator.configs.get(config_key="function")
        )
    assert function_of(calculator) == "calculator"


def test_a_manager_cannot_rename_a_python_tool_without_a_function_config_into_another_function(
    owner, python_tools
):
    calculator, unit_convert = python_tools
    tool_services.tool_update(actor=None, tool=unit_convert, data={"name": "convert_units"})
    ToolConfig.objects.filter(tool=calculator, config_key="function").delete()  # an old row
    role, user = _agent(owner, "renamer", rights=("edit_tools",))
    _manage(role, calculator)
    response = token_client(user).patch(
        f"/api/v1/tools/{calculator.pk}", {"name": "unit_convert"}, format="json"
    )
    assert response.status_code == 403, response.content
    assert response.json()["error"]["details"] == [
        {"field": "name", "message": "Not yours to change."}
    ]
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=user, tool=calculator, data={"name": "unit_convert"})
    assert Tool.objects.get(pk=calculator.pk).name == "calculator"


def test_a_migrated_python_tool_has_its_function_stored(db):
    # Rows as an older release left them: no function config, or an empty one.
    bare = Tool.objects.create(name="legacy_calc", type="python")
    blank = Tool.objects.create(name="legacy_blank", type="python")
    ToolConfig.objects.create(tool=blank, config_key="function", plain_value="")
    kept = Tool.objects.create(name="legacy_named", type="python")
    ToolConfig.objects.create(tool=kept, config_key="function", plain_value="text_stats")
    other = Tool.objects.create(name="legacy_http", type="http")
    migration = importlib.import_module("registry.migrations.0021_python_tool_function_explicit")
    migration.store_functions(apps, None)
    assert function_of(bare) == "legacy_calc"
    assert function_of(blank) == "legacy_blank"
    assert function_of(kept) == "text_stats"
    assert function_of(other) is None


def test_a_manager_without_the_edit_right_cannot_patch_a_tool_or_add_parameters(
    owner, tool_managers_role, manager_user
):
    tool = tool_services.tool_create(
        actor=None,
        name="weather",
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://w.example"}],
    )
    _manage(tool_managers_role, tool)
    client = token_client(manager_user)
    patched = client.patch(f"/api/v1/tools/{tool.pk}", {"description": "x"}, format="json")
    assert patched.status_code == 403, patched.content
    assert "Edit tool definitions" in patched.json()["error"]["message"]
    added = client.post(f"/api/v1/tools/{tool.pk}/parameters", {"name": "city"}, format="json")
    assert added.status_code == 403, added.content
    with pytest.raises(PermissionDenied):
        tool_services.parameter_create(actor=manager_user, tool=tool, name="city")
    assert not ToolParameter.objects.filter(tool=tool).exists()
    # Switching it off stays theirs: it only ever stops calls.
    assert client.delete(f"/api/v1/tools/{tool.pk}").status_code == 204


@pytest.mark.parametrize(
    ("key", "value"),
    [("base_url", "https://collector.example"), ("endpoint", "https://collector.example/x")],
)
def test_a_manager_with_the_edit_right_cannot_change_what_an_http_tool_runs(owner, key, value):
    tool = tool_services.tool_create(
        actor=None,
        name="status_page",
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://s.example"}],
    )
    role, user = _agent(owner, "editor", rights=("edit_tools",))
    _manage(role, tool)
    client = token_client(user)
    moved = client.post(
        f"/api/v1/tools/{tool.pk}/configs",
        {"config_key": key, "config_value": value},
        format="json",
    )
    assert moved.status_code == 403, moved.content
    retyped = client.patch(f"/api/v1/tools/{tool.pk}", {"type": "python"}, format="json")
    assert retyped.status_code == 403, retyped.content
    with pytest.raises(PermissionDenied):
        tool_services.config_set(actor=user, tool=tool, config_key=key, config_value=value)
    # What the right covers: the description, parameters, other configs.
    assert (
        client.patch(f"/api/v1/tools/{tool.pk}", {"description": "d"}, format="json").status_code
        == 200
    )
    added = client.post(f"/api/v1/tools/{tool.pk}/parameters", {"name": "q"}, format="json")
    assert added.status_code == 201, added.content
    assert ToolConfig.objects.get(tool=tool, config_key="base_url").value == "https://s.example"


@pytest.fixture
def limited(owner, staff_user):
    """An agent with the rate-limit right and a manage grant on a tool, under the admin's
    per-agent limit on it."""
    tool = tool_services.tool_create(actor=None, name="search", type="http")
    role, user = _agent(owner, "limited-agent", rights=("rate_limits", "edit_tools"))
    _manage(role, tool)
    rule = limit_services.rate_limit_create(
        actor=staff_user, tool=tool, scope="agent", max_requests=10, time_window_seconds=60
    )
    return tool, user, rule


def test_a_manager_cannot_delete_or_loosen_a_rate_limit_that_governs_its_own_calls(limited):
    _tool, user, rule = limited
    client = token_client(user)
    assert client.delete(f"/api/v1/rate-limits/{rule.pk}").status_code == 403
    for change in ({"max_requests": 1000}, {"is_active": False}, {"time_window_seconds": 1}):
        response = client.patch(f"/api/v1/rate-limits/{rule.pk}", change, format="json")
        assert response.status_code == 403, (change, response.content)
        assert response.json()["error"]["code"] == "own_control"
    with pytest.raises(PermissionDenied):
        limit_services.rate_limit_delete(actor=user, rule=rule)
    with pytest.raises(PermissionDenied):
        limit_services.rate_limit_update(actor=user, rule=rule, data={"max_requests": 1000})
    assert RateLimitRule.objects.get(pk=rule.pk).max_requests == 10
    # Tightening it, or adding a limit, stays allowed.
    tighter = client.patch(f"/api/v1/rate-limits/{rule.pk}", {"max_requests": 5}, format="json")
    assert tighter.status_code == 200, tighter.content


def test_a_manager_without_the_rate_limit_right_cannot_touch_a_tools_limits(
    tool_managers_role, manager_user, staff_user
):
    tool = tool_services.tool_create(actor=None, name="lookup", type="http")
    _manage(tool_managers_role, tool)
    rule = limit_services.rate_limit_create(
        actor=staff_user, tool=tool, scope="global", max_requests=10, time_window_seconds=60
    )
    client = token_client(manager_user)
    assert client.delete(f"/api/v1/rate-limits/{rule.pk}").status_code == 403
    created = client.post(
        "/api/v1/rate-limits",
        {"tool_id": str(tool.pk), "max_requests": 1, "time_window_seconds": 60},
        format="json",
    )
    assert created.status_code == 403, created.content
    assert RateLimitRule.objects.filter(pk=rule.pk).exists()


@pytest.fixture
def admin_agent(owner):
    """An agent in a platform-admin role: otherwise allowed every write."""
    role = make_role(
        "agent-admins", role_services.PLATFORM_ADMIN_PERMISSIONS, all_tools_action="manage"
    )
    agent = agent_services.agent_create(
        actor=None, name="admin-agent", owner=owner, role_ids=[role.pk]
    )
    return agent.user


def test_an_agent_cannot_loosen_a_guard_over_its_own_calls(admin_agent, staff_user):
    tool = tool_services.tool_create(actor=None, name="payroll", type="http")
    guard = guard_services.guard_create(
        actor=staff_user, tool=tool, name="no-pii", kind="pii", action="redact"
    )
    client = token_client(admin_agent)
    assert client.delete(f"/api/v1/guards/{guard.pk}").status_code == 403
    off = client.patch(f"/api/v1/guards/{guard.pk}", {"is_active": False}, format="json")
    assert off.status_code == 403, off.content
    with pytest.raises(PermissionDenied):
        guard_services.guard_update(actor=admin_agent, guard=guard, data={"action": "flag"})
    assert Guard.objects.get(pk=guard.pk).is_active
    described = client.patch(f"/api/v1/guards/{guard.pk}", {"description": "d"}, format="json")
    assert described.status_code == 200, described.content


def test_an_agent_cannot_turn_off_approval_of_a_tool_it_calls(admin_agent, staff_user):
    from registry.policy import policy_allows

    tool = tool_services.tool_create(
        actor=None, name="payments", type="http", requires_approval=True
    )
    client = token_client(admin_agent)
    for change in ({"requires_approval": False}, {"approval_condition": {"required": ["x"]}}):
        response = client.patch(f"/api/v1/tools/{tool.pk}", change, format="json")
        assert response.status_code == 403, (change, response.content)
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=admin_agent, tool=tool, data={"requires_approval": False})
    assert Tool.objects.get(pk=tool.pk).requires_approval
    # A person who is a platform admin may; and turning approval on never loosens.
    assert policy_allows(actor=staff_user, action="tool.approval", tool=tool, loosens=True)
    other = tool_services.tool_create(actor=None, name="refunds", type="http")
    on = client.patch(f"/api/v1/tools/{other.pk}", {"requires_approval": True}, format="json")
    assert on.status_code == 200, on.content
