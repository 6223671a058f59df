"""Ways around ``registry.policy`` found by probing it: each test says what should hold.

The writer is an agent holding ``manage`` on the tool and the rights "Edit tool
definitions" and "Set rate limits" (no platform-admin right), as in the API table.
"""

from __future__ import annotations

import json

import pytest

from executions.services.admission import resolve_caller
from executions.services.governance import RateLimited, rate_limit_admit
from registry import authorization
from registry.importers.run import import_content
from registry.models import RateLimitRule, Tool
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
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
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
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


def _mine(role, name: str) -> Tool:
    tool = tool_services.tool_create(
        actor=None,
        name=name,
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://mine.example"}],
    )
    _manage(role, tool)
    return tool


def _calls_of(host: str) -> list[Tool]:
    return [
        t
        for t in Tool.objects.all()
        if any(host in str(c.plain_value) for c in t.configs.filter(config_key="base_url"))
    ]


PAYMENTS_SPEC = json.dumps(
    {
        "openapi": "3.1.0",
        "paths": {"/refunds": {"post": {"operationId": "refund", "summary": "Refund"}}},
    }
)


def test_a_manager_cannot_have_an_openapi_import_adopt_its_tool(editor, staff_user):
    """The import finds its earlier tools by two metadata keys any editor may write:
    a manager's tool marked with them becomes the imported operation, grants and all."""
    role, user = editor
    mine = _mine(role, "probe_mine")
    try:
        tool_services.tool_update(
            actor=user,
            tool=mine,
            data={
                "tool_metadata": {
                    "openapi_namespace": "payments",
                    "openapi_operation": "POST /refunds",
                }
            },
        )
    except PermissionDenied:
        pass  # refusing the marks is one way to hold
    report = import_content(
        PAYMENTS_SPEC,
        actor=staff_user,
        base_url="https://payments.internal.example",
        namespace="payments",
    )
    assert report.ok, report.text()
    refunds = _calls_of("payments.internal.example")
    assert refunds, "the import wrote no tool for POST /refunds"
    assert not any(authorization.can(user, "execute", t) for t in refunds), (
        "the manager may call the imported refund operation nobody granted it"
    )


def test_a_manager_cannot_have_a_catalog_import_adopt_its_tool_by_name(editor, staff_user):
    """A catalog import updates the tool of the same name: a manager's tool renamed to a
    name an admin is about to import becomes that tool, grants and all."""
    role, user = editor
    mine = _mine(role, "probe_mine2")
    try:
        tool_services.tool_update(actor=user, tool=mine, data={"name": "crm_delete_contact"})
    except PermissionDenied:
        pass  # refusing the rename is one way to hold
    catalog = json.dumps(
        {
            "tools": [
                {
                    "name": "crm_delete_contact",
                    "type": "http",
                    "description": "Delete a CRM contact",
                    "configs": {
                        "base_url": "https://crm.internal.example",
                        "endpoint": "/contacts/delete",
                        "method": "POST",
                    },
                }
            ]
        }
    )
    report = import_content(catalog, actor=staff_user)
    assert report.ok, report.text()
    crm = _calls_of("crm.internal.example")
    assert crm, "the import wrote no crm tool"
    assert not any(authorization.can(user, "execute", t) for t in crm), (
        "the manager may call the imported CRM tool nobody granted it"
    )


def test_a_manager_cannot_hold_a_name_in_an_mcp_servers_namespace_by_taking_it_first(
    editor, staff_user
):
    """``<server>__…`` names are the server's tools': a manager's tool renamed into that
    namespace before the server is registered keeps passing for one of them (and the
    sync pushes the real one to a suffixed name)."""
    role, user = editor
    mine = _mine(role, "probe_mine3")
    try:
        tool_services.tool_update(actor=user, tool=mine, data={"name": "billing__refund"})
    except PermissionDenied:
        pass  # refusing the reserved name is one way to hold
    mcp_services.mcp_server_create(
        actor=staff_user,
        name="billing",
        transport="streamable_http",
        url="http://127.0.0.1:9/mcp",
    )
    squatters = [
        t.name
        for t in Tool.objects.filter(name__startswith="billing__")
        if (t.tool_metadata or {}).get("mcp_server") != "billing"
    ]
    assert squatters == [], f"tools outside server 'billing' named in its namespace: {squatters}"
