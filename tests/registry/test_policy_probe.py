"""Ways around ``registry.policy`` found by probing it: each test says what should hold.

The writer is an agent holding ``manage`` on the tool and the rights "Edit tool
definitions" and "Set rate limits" (no platform-admin right), as in the API table.
"""

from __future__ import annotations

import pytest

from executions.services.admission import resolve_caller
from executions.services.governance import RateLimited, rate_limit_admit
from registry.models import RateLimitRule, Tool
from registry.services import access as access_services
from registry.services import limits as limit_services
from registry.services import tools as tool_services
from tests.registry.test_policy import _agent, _manage
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor(owner):
    """An agent with manage (given per test) and the edit/rate-limit rights, not an admin."""
    return _agent(owner, "probe-editor", rights=["edit_tools", "rate_limits"])


def _database_tool(role):
    tool = tool_services.tool_create(
        actor=None,
        name="ledger_lookup",
        type="database",
        parameters=[{"name": "account", "required": True}],
        configs=[
            {
                "config_key": "connection_string",
                "config_value": "postgresql://ledger:s3cret@db.internal.example/ledger",
                "is_secret": True,
            },
            {
                "config_key": "query_template",
                "config_value": "SELECT balance FROM accounts WHERE id = :account",
            },
            {"config_key": "read_only", "config_value": True},
        ],
    )
    _manage(role, tool)
    return tool


def test_a_manager_cannot_change_the_sql_a_database_tool_runs(editor):
    # The statement is what a database tool runs, with the operator's credentials.
    role, user = editor
    tool = _database_tool(role)
    with pytest.raises(PermissionDenied):
        tool_services.config_set(
            actor=user,
            tool=tool,
            config_key="query_template",
            config_value="DELETE FROM accounts WHERE id = :account",
        )


def test_a_manager_cannot_make_a_read_only_database_tool_write(editor):
    role, user = editor
    tool = _database_tool(role)
    with pytest.raises(PermissionDenied):
        tool_services.config_set(actor=user, tool=tool, config_key="read_only", config_value=False)


def _placeholder_host_tool(role):
    """An HTTP tool whose host is an argument, held to two hosts by its parameter's
    schema, and which sends a secret with every call."""
    tool = tool_services.tool_create(
        actor=None,
        name="regional_api",
        type="http",
        parameters=[
            {
                "name": "region_host",
                "required": True,
                "json_schema": {"enum": ["eu.api.example.com", "us.api.example.com"]},
            }
        ],
        configs=[
            {"config_key": "base_url", "config_value": "https://{region_host}/v1/report"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": "tok-123", "is_secret": True},
        ],
    )
    _manage(role, tool)
    return tool


def test_a_manager_cannot_widen_the_hosts_an_http_tool_calls_through_its_parameter(editor):
    # base_url "https://{region_host}/…": the parameter's schema is where calls may go.
    role, user = editor
    tool = _placeholder_host_tool(role)
    parameter = tool.parameters.get(name="region_host")
    with pytest.raises(PermissionDenied):
        tool_services.parameter_update(actor=user, parameter=parameter, data={"json_schema": {}})


def test_a_manager_cannot_replace_the_parameter_that_says_where_an_http_tool_calls(editor):
    role, user = editor
    tool = _placeholder_host_tool(role)
    parameter = tool.parameters.get(name="region_host")
    with pytest.raises(PermissionDenied):
        tool_services.parameter_delete(actor=user, parameter=parameter)
        tool_services.parameter_create(actor=user, tool=tool, name="region_host", required=True)


def test_an_agent_cannot_reset_its_own_rate_limit_by_lengthening_the_window(editor):
    """Counters are keyed by the window's start: a "tighter" window (one second longer)
    starts a fresh count, so each such edit hands the agent its whole quota again."""
    role, user = editor
    tool = tool_services.tool_create(
        actor=None,
        name="limited_http",
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://limited.example"}],
    )
    _manage(role, tool)
    rule = limit_services.rate_limit_create(
        actor=None, tool=tool, scope="agent", max_requests=1, time_window_seconds=3600
    )
    caller = resolve_caller(user)
    rate_limit_admit(caller=caller, tool=tool)
    with pytest.raises(RateLimited):
        rate_limit_admit(caller=caller, tool=tool)
    admitted = 0
    for window in (3601, 3602, 3603):
        try:
            limit_services.rate_limit_update(
                actor=user,
                rule=RateLimitRule.objects.get(pk=rule.pk),
                data={"time_window_seconds": window},
            )
        except PermissionDenied:
            continue  # refusing the edit is one way to hold
        try:
            rate_limit_admit(caller=caller, tool=Tool.objects.get(pk=tool.pk))
            admitted += 1
        except RateLimited:
            pass
    assert admitted == 0, f"{admitted} more call(s) admitted past a 1-per-hour limit"


def test_an_agent_cannot_reset_its_own_rate_limit_by_retuning_calls_and_window(editor):
    """Lowering the calls while lengthening the window reads as tighter, yet resets."""
    role, user = editor
    tool = tool_services.tool_create(
        actor=None,
        name="limited_http2",
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://limited2.example"}],
    )
    _manage(role, tool)
    access_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    rule = limit_services.rate_limit_create(
        actor=None, tool=tool, scope="agent", max_requests=5, time_window_seconds=600
    )
    caller = resolve_caller(user)
    for _ in range(5):
        rate_limit_admit(caller=caller, tool=tool)
    with pytest.raises(RateLimited):
        rate_limit_admit(caller=caller, tool=tool)
    try:
        limit_services.rate_limit_update(
            actor=user,
            rule=RateLimitRule.objects.get(pk=rule.pk),
            data={"max_requests": 4, "time_window_seconds": 700},
        )
    except PermissionDenied:
        return  # refusing the edit is one way to hold
    with pytest.raises(RateLimited):
        rate_limit_admit(caller=caller, tool=Tool.objects.get(pk=tool.pk))
