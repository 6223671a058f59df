"""Every write service by the same cast → allowed or refused, whoever calls it.

The API table (``test_authorization_matrix``) shows what each endpoint answers; this
one calls the services themselves, as the admin, an importer or a future face would:
``registry.policy`` is checked there, so no face can forget it. ``system`` is
``actor=None`` (migrations, syncs run by command). Cells: ``ok``, or the status of the
error the service raised (403 refused; 409 allowed but the row's state refuses it).

U is a plain HTTP tool (not under approval) that mang and medt may manage, with a
parameter, configs, an agent-scoped rate limit UL and a guard UG; PY is a Python tool
they may manage. T, L, GD, M and TS are the API table's (T requires approval).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from registry.models import Guard, RateLimitRule, Tool, ToolGrant, Toolset
from registry.models.mcp import MCPServer
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
from registry.services import pinning
from registry.services import tools as tool_services
from registry.services import toolsets as toolset_services
from tests.registry.test_authorization_matrix import _world, governed_world, world
from toolhub.exceptions import ToolHubError

__all__ = ["_world", "governed_world", "world"]  # the API table's fixtures, shared

SERVICE_MATRIX = """
write                                 none read exec mang medt padm supr system
tool_create.http                       403  403  403  403  403   ok   ok   ok
tool_create.python                     403  403  403  403  403   ok   ok   ok
tool_update.description                403  403  403  403   ok   ok   ok   ok
tool_update.type                       403  403  403  403  403   ok   ok   ok
tool_update.risk                       403  403  403  403  403   ok   ok   ok
tool_update.approval_on                403  403  403  403  403   ok   ok   ok
tool_update.approval_off               403  403  403  403  403   ok   ok   ok
tool_deactivate                        403  403  403   ok   ok   ok   ok   ok
tool_delete                            403  403  403  403  403   ok   ok   ok
parameter_create                       403  403  403  403   ok   ok   ok   ok
parameter_update                       403  403  403  403   ok   ok   ok   ok
parameter_delete                       403  403  403  403   ok   ok   ok   ok
config_set.plain                       403  403  403  403   ok   ok   ok   ok
config_set.base_url                    403  403  403  403  403   ok   ok   ok
config_delete.base_url                 403  403  403  403  403   ok   ok   ok
config_set.python_function             403  403  403  403  403   ok   ok   ok
config_delete.python_function          403  403  403  403  403   ok   ok   ok
config_delete.plain                    403  403  403  403   ok   ok   ok   ok
grant_create                           403  403  403  403  403   ok   ok   ok
grant_revoke                           403  403  403  403  403   ok   ok   ok
guard_create                           403  403  403  403  403   ok   ok   ok
guard_update.description               403  403  403  403  403   ok   ok   ok
guard_update.off                       403  403  403  403  403   ok   ok   ok
guard_delete                           403  403  403  403  403   ok   ok   ok
rate_limit_create                      403  403  403  403   ok   ok   ok   ok
rate_limit_create.all_tools            403  403  403  403  403   ok   ok   ok
rate_limit_update.tighter              403  403  403  403   ok   ok   ok   ok
rate_limit_update.looser               403  403  403  403  403   ok   ok   ok
rate_limit_update.off                  403  403  403  403  403   ok   ok   ok
rate_limit_delete                      403  403  403  403  403   ok   ok   ok
mcp_server_create                      403  403  403  403  403   ok   ok   ok
mcp_server_update                      403  403  403  403  403   ok   ok   ok
mcp_server_delete                      403  403  403  403  403   ok   ok   ok
toolset_create                         403  403  403  403  403   ok   ok   ok
toolset_update                         403  403  403  403  403   ok   ok   ok
toolset_delete                         403  403  403  403  403   ok   ok   ok
tool_definition_approve                403  403  403  403  403  409  409  403
"""


@pytest.fixture
def services_world(governed_world):
    roles = governed_world["roles"]
    u = tool_services.tool_create(
        actor=None,
        name="svc_tool",
        type="http",
        parameters=[{"name": "q"}],
        configs=[
            {"config_key": "base_url", "config_value": "https://svc.example"},
            {"config_key": "timeout_seconds", "config_value": 10},
        ],
    )
    py = tool_services.tool_create(actor=None, name="svc_py", type="python")
    for tool in (u, py):
        for role in (roles["managers"], roles["editors"]):
            grant_services.grant_create(actor=None, role=role, action="manage", tool=tool)
    limit_services.rate_limit_create(
        actor=None, tool=u, scope="agent", max_requests=10, time_window_seconds=60
    )
    guard_services.guard_create(actor=None, tool=u, name="svc-guard", kind="pii", action="redact")
    return {**governed_world, "U": u, "PY": py}


def _u(w):
    return Tool.objects.get(pk=w["U"].pk)


def _rule(w):
    return RateLimitRule.objects.get(tool=w["U"])


def _guard(w):
    return Guard.objects.get(name="svc-guard")


WRITES = {
    "tool_create.http": lambda w, a: tool_services.tool_create(actor=a, name="n1", type="http"),
    "tool_create.python": lambda w, a: tool_services.tool_create(actor=a, name="n2", type="python"),
    "tool_update.description": lambda w, a: tool_services.tool_update(
        actor=a, tool=_u(w), data={"description": "new"}
    ),
    "tool_update.type": lambda w, a: tool_services.tool_update(
        actor=a, tool=_u(w), data={"type": "database"}
    ),
    "tool_update.risk": lambda w, a: tool_services.tool_update(
        actor=a, tool=_u(w), data={"tool_metadata": {"risk": "low"}}
    ),
    "tool_update.approval_on": lambda w, a: tool_services.tool_update(
        actor=a, tool=_u(w), data={"requires_approval": True}
    ),
    "tool_update.approval_off": lambda w, a: tool_services.tool_update(
        actor=a, tool=Tool.objects.get(pk=w["tool"].pk), data={"requires_approval": False}
    ),
    "tool_deactivate": lambda w, a: tool_services.tool_deactivate(actor=a, tool=_u(w)),
    "tool_delete": lambda w, a: tool_services.tool_delete(actor=a, tool=w["PY"]),
    "parameter_create": lambda w, a: tool_services.parameter_create(
        actor=a, tool=_u(w), name="extra"
    ),
    "parameter_update": lambda w, a: tool_services.parameter_update(
        actor=a, parameter=_u(w).parameters.get(), data={"description": "d"}
    ),
    "parameter_delete": lambda w, a: tool_services.parameter_delete(
        actor=a, parameter=_u(w).parameters.get()
    ),
    "config_set.plain": lambda w, a: tool_services.config_set(
        actor=a, tool=_u(w), config_key="timeout_seconds", config_value=20
    ),
    "config_set.base_url": lambda w, a: tool_services.config_set(
        actor=a, tool=_u(w), config_key="base_url", config_value="https://elsewhere.example"
    ),
    "config_delete.base_url": lambda w, a: tool_services.config_delete(
        actor=a, config=_u(w).configs.get(config_key="base_url")
    ),
    "config_set.python_function": lambda w, a: tool_services.config_set(
        actor=a, tool=w["PY"], config_key="function", config_value="unit_convert"
    ),
    "config_delete.python_function": lambda w, a: tool_services.config_delete(
        actor=a, config=w["PY"].configs.get(config_key="function")
    ),
    "config_delete.plain": lambda w, a: tool_services.config_delete(
        actor=a, config=_u(w).configs.get(config_key="timeout_seconds")
    ),
    "grant_create": lambda w, a: grant_services.grant_create(
        actor=a, role=w["roles"]["nobody"], action="read", tool=_u(w)
    ),
    "grant_revoke": lambda w, a: grant_services.grant_revoke(
        actor=a, grant=ToolGrant.objects.get(role=w["roles"]["readers"])
    ),
    "guard_create": lambda w, a: guard_services.guard_create(
        actor=a, tool=_u(w), name="g2", kind="pii", action="flag"
    ),
    "guard_update.description": lambda w, a: guard_services.guard_update(
        actor=a, guard=_guard(w), data={"description": "d"}
    ),
    "guard_update.off": lambda w, a: guard_services.guard_update(
        actor=a, guard=_guard(w), data={"is_active": False}
    ),
    "guard_delete": lambda w, a: guard_services.guard_delete(actor=a, guard=_guard(w)),
    "rate_limit_create": lambda w, a: limit_services.rate_limit_create(
        actor=a, tool=_u(w), max_requests=1, time_window_seconds=60
    ),
    "rate_limit_create.all_tools": lambda w, a: limit_services.rate_limit_create(
        actor=a, tool=None, max_requests=1, time_window_seconds=60
    ),
    "rate_limit_update.tighter": lambda w, a: limit_services.rate_limit_update(
        actor=a, rule=_rule(w), data={"max_requests": 5}
    ),
    "rate_limit_update.looser": lambda w, a: limit_services.rate_limit_update(
        actor=a, rule=_rule(w), data={"max_requests": 500}
    ),
    "rate_limit_update.off": lambda w, a: limit_services.rate_limit_update(
        actor=a, rule=_rule(w), data={"is_active": False}
    ),
    "rate_limit_delete": lambda w, a: limit_services.rate_limit_delete(actor=a, rule=_rule(w)),
    "mcp_server_create": lambda w, a: mcp_services.mcp_server_create(
        actor=a, name="svc_mcp", transport="streamable_http", url="http://127.0.0.1:9/mcp"
    ),
    "mcp_server_update": lambda w, a: mcp_services.mcp_server_update(
        actor=a, server=MCPServer.objects.get(name="matrix_mcp"), data={"description": "d"}
    ),
    "mcp_server_delete": lambda w, a: mcp_services.mcp_server_delete(
        actor=a, server=MCPServer.objects.get(name="matrix_mcp")
    ),
    "toolset_create": lambda w, a: toolset_services.toolset_create(
        actor=a, name="Svc", slug="svc", tools=[_u(w)]
    ),
    "toolset_update": lambda w, a: toolset_services.toolset_update(
        actor=a, toolset=Toolset.objects.get(slug="matrix"), data={"description": "d"}
    ),
    "toolset_delete": lambda w, a: toolset_services.toolset_delete(
        actor=a, toolset=Toolset.objects.get(slug="matrix")
    ),
    "tool_definition_approve": lambda w, a: pinning.tool_definition_approve(actor=a, tool=_u(w)),
}


def _outcome(write, world, actor) -> str:
    savepoint = transaction.savepoint()
    try:
        write(world, actor)
    except ToolHubError as exc:
        return str(exc.status_code)
    finally:
        transaction.savepoint_rollback(savepoint)
    return "ok"


def _cases():
    header, *lines = SERVICE_MATRIX.strip().splitlines()
    principals = header.split()[1:]
    for name, *cells in (line.split() for line in lines):
        assert len(cells) == len(principals), name
        yield pytest.param(name, dict(zip(principals, cells, strict=True)), id=name)


@pytest.mark.parametrize(("write", "expected"), list(_cases()))
def test_service_matrix(services_world, write, expected):
    users = get_user_model().objects
    mismatches = []
    for principal, want in expected.items():
        user = services_world["users"][principal]
        actor = None if user is None else users.get(pk=user.pk)  # no per-user caches
        got = _outcome(WRITES[write], services_world, actor)
        if got != want:
            mismatches.append((principal, want, got))
    assert not mismatches, mismatches


def test_every_write_in_the_table_is_driven():
    names = [c.values[0] for c in _cases()]
    assert sorted(names) == sorted(WRITES)
