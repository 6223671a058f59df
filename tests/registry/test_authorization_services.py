"""Every write service by the same cast → allowed or refused, whoever calls it.

The API table (``test_authorization_matrix``) shows what each endpoint answers; this
one calls the services themselves, as the admin, an importer or a future face would:
``registry.policy`` is checked there, so no face can forget it. ``system`` is
``actor=None`` (migrations, syncs run by command). Cells: ``ok``, or the status of the
error the service raised (403 refused; 409 allowed but the row's state refuses it).

U is a plain HTTP tool (not under approval) that mang and medt may manage, with a
parameter, configs, an agent-scoped rate limit UL and a guard UG; PY is a Python tool
they may manage. T, L, GD, M and TS are the API table's (T requires approval).

ownr is the person who owns every agent of the cast (and holds no role): she manages
the tokens of her agents (``own_agent``: the read agent's) and nothing else, not those
of OA, another person's agent (``other_agent``), nor a person's (``person``: her own).
``agent_update.roles`` gives the mang agent the editors role: in the mang column, an
agent raising its own rights.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from oauth2_provider.models import Application

import registry.services
from registry.models import (
    Agent,
    ApiToken,
    Consent,
    Guard,
    RateLimitRule,
    SsoGroupMapping,
    Tool,
    ToolGrant,
    Toolset,
    UpstreamConnection,
    UpstreamProvider,
)
from registry.models.mcp import MCPServer
from registry.services import agents as agent_services
from registry.services import consents as consent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
from registry.services import pinning, standard_roles
from registry.services import roles as role_services
from registry.services import sso as sso_services
from registry.services import tokens as token_services
from registry.services import tools as tool_services
from registry.services import toolsets as toolset_services
from registry.services import upstream as upstream_services
from tests.factories import make_token, make_user
from tests.registry.test_authorization_matrix import _world, governed_world, world
from toolhub.exceptions import ToolHubError

__all__ = ["_world", "governed_world", "world"]  # the API table's fixtures, shared

SERVICE_MATRIX = """
write                                 none read exec mang medt padm supr ownr system
tool_create.http                       403  403  403  403  403   ok   ok  403   ok
tool_create.python                     403  403  403  403  403   ok   ok  403   ok
tool_update.description                403  403  403  403   ok   ok   ok  403   ok
tool_update.type                       403  403  403  403  403   ok   ok  403   ok
tool_update.risk                       403  403  403  403  403   ok   ok  403   ok
tool_update.approval_on                403  403  403  403  403   ok   ok  403   ok
tool_update.approval_off               403  403  403  403  403   ok   ok  403   ok
tool_deactivate                        403  403  403   ok   ok   ok   ok  403   ok
tool_delete                            403  403  403  403  403   ok   ok  403   ok
parameter_create                       403  403  403  403   ok   ok   ok  403   ok
parameter_update                       403  403  403  403   ok   ok   ok  403   ok
parameter_delete                       403  403  403  403   ok   ok   ok  403   ok
config_set.plain                       403  403  403  403   ok   ok   ok  403   ok
config_set.base_url                    403  403  403  403  403   ok   ok  403   ok
config_delete.base_url                 403  403  403  403  403   ok   ok  403   ok
config_set.python_function             403  403  403  403  403   ok   ok  403   ok
config_delete.python_function          403  403  403  403  403   ok   ok  403   ok
config_delete.plain                    403  403  403  403   ok   ok   ok  403   ok
grant_create                           403  403  403  403  403   ok   ok  403   ok
grant_revoke                           403  403  403  403  403   ok   ok  403   ok
guard_create                           403  403  403  403  403   ok   ok  403   ok
guard_update.description               403  403  403  403  403   ok   ok  403   ok
guard_update.off                       403  403  403  403  403   ok   ok  403   ok
guard_delete                           403  403  403  403  403   ok   ok  403   ok
rate_limit_create                      403  403  403  403   ok   ok   ok  403   ok
rate_limit_create.all_tools            403  403  403  403  403   ok   ok  403   ok
rate_limit_update.tighter              403  403  403  403   ok   ok   ok  403   ok
rate_limit_update.looser               403  403  403  403  403   ok   ok  403   ok
rate_limit_update.off                  403  403  403  403  403   ok   ok  403   ok
rate_limit_delete                      403  403  403  403  403   ok   ok  403   ok
mcp_server_create                      403  403  403  403  403   ok   ok  403   ok
mcp_server_update                      403  403  403  403  403   ok   ok  403   ok
mcp_server_delete                      403  403  403  403  403   ok   ok  403   ok
toolset_create                         403  403  403  403  403   ok   ok  403   ok
toolset_update                         403  403  403  403  403   ok   ok  403   ok
toolset_delete                         403  403  403  403  403   ok   ok  403   ok
tool_definition_approve                403  403  403  403  403  409  409  403  403
agent_create                           403  403  403  403  403   ok   ok  403   ok
agent_update.description               403  403  403  403  403   ok   ok  403   ok
agent_update.roles                     403  403  403  403  403   ok   ok  403   ok
agent_update.owner                     403  403  403  403  403   ok   ok  403   ok
agent_deactivate                       403  403  403  403  403   ok   ok  403   ok
role_create                            403  403  403  403  403   ok   ok  403   ok
role_update.description                403  403  403  403  403   ok   ok  403   ok
role_update.rights                     403  403  403  403  403   ok   ok  403   ok
role_delete                            403  403  403  403  403   ok   ok  403   ok
standard_roles_ensure                  403  403  403  403  403   ok   ok  403   ok
token_issue.own_agent                  403  403  403  403  403   ok   ok   ok   ok
token_revoke.own_agent                 403  403  403  403  403   ok   ok   ok   ok
token_issue.other_agent                403  403  403  403  403   ok   ok  403   ok
token_revoke.other_agent               403  403  403  403  403   ok   ok  403   ok
token_issue.person                     403  403  403  403  403   ok   ok  403   ok
consent_revoke.owners                  403  403  403  403  403   ok   ok   ok   ok
consent_revoke.someone_elses           403  403  403  403  403   ok   ok  403   ok
sso_mapping_create                     403  403  403  403  403   ok   ok  403   ok
sso_mapping_update                     403  403  403  403  403   ok   ok  403   ok
sso_mapping_delete                     403  403  403  403  403   ok   ok  403   ok
upstream_provider_create               403  403  403  403  403   ok   ok  403   ok
upstream_provider_update               403  403  403  403  403   ok   ok  403   ok
upstream_provider_delete               403  403  403  403  403   ok   ok  403   ok
upstream_revoke.owners                 403  403  403  403  403   ok   ok   ok   ok
upstream_revoke.someone_elses          403  403  403  403  403   ok   ok  403   ok
config_set.upstream_provider           403  403  403  403  403   ok   ok  403   ok
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
    otto = make_user("owner-otto")
    other = agent_services.agent_create(actor=None, name="agent-oa", owner=otto)
    make_token(other.user)
    users = {**governed_world["users"], "ownr": governed_world["agents"]["read"].owner}
    client = Application.objects.create(
        name="svc client",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    for person in (users["ownr"], otto):
        consent_services.consent_give(
            person=person, client=client, resource="http://testserver/mcp", scopes=["tools:call"]
        )
    sso_services.sso_mapping_create(actor=None, idp_group="svc", role=roles["readers"])
    provider = upstream_services.upstream_provider_create(
        actor=None,
        name="Svc Acme",
        slug="svc-acme",
        authorization_url="https://idp.example/auth",
        token_url="https://idp.example/token",
        client_id="svc",
    )
    for person in (users["ownr"], otto):
        upstream_services.upstream_connection_save(
            person=person, provider=provider, tokens=upstream_services.TokenSet("a", "r", 3600)
        )
    return {**governed_world, "U": u, "PY": py, "OA": other, "users": users, "otto": otto}


def _u(w):
    return Tool.objects.get(pk=w["U"].pk)


def _rule(w):
    return RateLimitRule.objects.get(tool=w["U"])


def _guard(w):
    return Guard.objects.get(name="svc-guard")


def _agent(w, key):
    return Agent.objects.get(pk=w["OA"].pk if key == "OA" else w["agents"][key].pk)


def _role(w, key):
    """A copy of the world's role: a deletion clears the primary key of the object deleted."""
    return Group.objects.get(pk=w["roles"][key].pk)


def _token_of(w, key):
    return ApiToken.objects.filter(user=_agent(w, key).user).first()


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
    "agent_create": lambda w, a: agent_services.agent_create(
        actor=a, name="svc-agent", owner=w["users"]["ownr"], role_ids=[w["roles"]["readers"].pk]
    ),
    "agent_update.description": lambda w, a: agent_services.agent_update(
        actor=a, agent=_agent(w, "read"), data={"description": "d"}
    ),
    "agent_update.roles": lambda w, a: agent_services.agent_update(
        actor=a,
        agent=_agent(w, "mang"),
        data={"role_ids": [w["roles"]["managers"].pk, w["roles"]["editors"].pk]},
    ),
    "agent_update.owner": lambda w, a: agent_services.agent_update(
        actor=a, agent=_agent(w, "read"), data={"owner": _agent(w, "OA").owner}
    ),
    "agent_deactivate": lambda w, a: agent_services.agent_update(
        actor=a, agent=_agent(w, "read"), data={"is_active": False}
    ),
    "role_create": lambda w, a: role_services.role_create(actor=a, name="svc-role"),
    "role_update.description": lambda w, a: role_services.role_update(
        actor=a, role=_role(w, "readers"), data={"description": "d"}
    ),
    "role_update.rights": lambda w, a: role_services.role_update(
        actor=a, role=_role(w, "readers"), data={"permissions": ["registry.grant_tool"]}
    ),
    "role_delete": lambda w, a: role_services.role_delete(actor=a, role=_role(w, "nobody")),
    "standard_roles_ensure": lambda w, a: standard_roles.ensure_standard_roles(actor=a),
    "token_issue.own_agent": lambda w, a: token_services.token_issue(
        actor=a, user=_agent(w, "read").user
    ),
    "token_revoke.own_agent": lambda w, a: token_services.token_revoke(
        actor=a, token=_token_of(w, "read")
    ),
    "token_issue.other_agent": lambda w, a: token_services.token_issue(
        actor=a, user=_agent(w, "OA").user
    ),
    "token_revoke.other_agent": lambda w, a: token_services.token_revoke(
        actor=a, token=_token_of(w, "OA")
    ),
    "token_issue.person": lambda w, a: token_services.token_issue(actor=a, user=w["users"]["ownr"]),
    # A consent is its person's to withdraw (and any platform admin's).
    "consent_revoke.owners": lambda w, a: consent_services.consent_revoke(
        actor=a, consent=Consent.objects.get(person=w["users"]["ownr"])
    ),
    "consent_revoke.someone_elses": lambda w, a: consent_services.consent_revoke(
        actor=a, consent=Consent.objects.get(person=w["otto"])
    ),
    "sso_mapping_create": lambda w, a: sso_services.sso_mapping_create(
        actor=a, idp_group="svc-new", role=_role(w, "readers")
    ),
    "sso_mapping_update": lambda w, a: sso_services.sso_mapping_update(
        actor=a, mapping=SsoGroupMapping.objects.get(idp_group="svc"), data={"makes_staff": True}
    ),
    "sso_mapping_delete": lambda w, a: sso_services.sso_mapping_delete(
        actor=a, mapping=SsoGroupMapping.objects.get(idp_group="svc")
    ),
    # Upstream providers are platform admins'; a person's connection is theirs to end too.
    "upstream_provider_create": lambda w, a: upstream_services.upstream_provider_create(
        actor=a,
        name="Svc Two",
        slug="svc-two",
        authorization_url="https://idp.example/auth",
        token_url="https://idp.example/token",
        client_id="svc",
    ),
    "upstream_provider_update": lambda w, a: upstream_services.upstream_provider_update(
        actor=a, provider=UpstreamProvider.objects.get(slug="svc-acme"), data={"name": "Svc"}
    ),
    "upstream_provider_delete": lambda w, a: upstream_services.upstream_provider_delete(
        actor=a, provider=UpstreamProvider.objects.get(slug="svc-acme")
    ),
    "upstream_revoke.owners": lambda w, a: upstream_services.upstream_connection_revoke(
        actor=a, connection=UpstreamConnection.objects.get(person=w["users"]["ownr"])
    ),
    "upstream_revoke.someone_elses": lambda w, a: upstream_services.upstream_connection_revoke(
        actor=a, connection=UpstreamConnection.objects.get(person=w["otto"])
    ),
    # Which tool is sent people's own tokens is a platform admin's choice (tool.risk).
    "config_set.upstream_provider": lambda w, a: tool_services.config_set(
        actor=a, tool=_u(w), config_key="upstream_provider", config_value="svc-acme"
    ),
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


# Every function of registry.services that takes an actor is a write some face calls on
# someone's behalf: it has a row above, or it says here why it needs none.
NOT_IN_THE_TABLE = {
    "audit_record": "records a write another service made (and checked)",
    "audit_event": "records a write another service made (and checked)",
    "actor_label": "names an actor for the audit log",
    "audit_membership": "records role changes the admin's user page made (superusers' page)",
    "check_tool_change": "a check tool services run before they write",
    "check_config_change": "a check tool services run before they write",
    "check_parameter_change": "a check tool services run before they write",
    "demo_seed": "the system's demo (a command): its writes go through the services",
    "tool_upsert": "imports and syncs: each write goes through the tool services above",
    "tool_activate": "tool_update with is_active (tool.edit, the tool_update rows)",
    "tool_definition_reject": "definition.decide, as tool_definition_approve",
    "tool_definition_hold": "only quarantines: what a sync (mcp_server.write) or a call saw",
    "tool_definition_restore": "the MCP sync (mcp_server.write) lifts a quarantine it saw end",
    "mcp_server_sync_run": "mcp_server.write, as mcp_server_update",
    "verification_request": "reviewers' (a read of the audit log, not a write of the registry)",
}


def _service_functions_taking_an_actor():
    package = registry.services
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or function.__module__ != module.__name__:
                continue
            if "actor" in inspect.signature(function).parameters:
                yield name


def test_every_service_taking_an_actor_is_in_the_table_or_says_why_not():
    driven = {name for write in WRITES.values() for name in write.__code__.co_names}
    found = set(_service_functions_taking_an_actor())
    assert not sorted(found - driven - set(NOT_IN_THE_TABLE))
    assert not sorted(set(NOT_IN_THE_TABLE) - found)  # no stale excuse
