"""Every endpoint by a fixed cast of principals → the expected status.

Read the table: one row per endpoint, one column per principal. Each cell runs
in its own transaction, so destructive calls don't affect the others.

Columns:
  anon  no credentials             none  agent with no grant
  read  agent whose role may read  exec  agent whose role may execute
  mang  agent whose role may manage (the tool T), and holds no platform right
  medt  agent whose role may manage T and holds the rights 'Edit tool definitions' and
        'Set rate limits' (registry/rights.py): both the right and the grant are needed
  padm  platform admin (person)    supr  superuser (person)
  revk  revoked token              expd  expired token
  inac  inactive agent (its role may manage T)

The second table (calls, approvals, limits, MCP servers, import, audit, stats, toolsets,
pinned definitions: T has no pending definition, so a decision is a 409)
adds two people: appr (may approve calls of T) and revw (compliance reviewer).
There E is a finished call and EP a call waiting for approval AP, both made by
the exec agent; L is a rate limit on T, GD a guard on T, M an MCP server and TS a
toolset. List endpoints answer 200 to every caller with only what the caller may see.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import URLResolver, get_resolver, resolve
from django.utils import timezone
from rest_framework.test import APIClient

from executions.models import Execution
from executions.services.pipeline import execution_request
from registry.models import ApiToken, Tool
from registry.rights import permissions_of
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from registry.services import toolsets as toolset_services
from tests.conftest import make_role
from tests.factories import make_token, make_user

MATRIX = """
endpoint                                    anon none read exec mang medt padm supr revk expd inac
GET    /tools                               401  200  200  200  200  200  200  200  401  401  401
POST   /tools                               401  403  403  403  403  403  201  201  401  401  401
GET    /tools/{T}                           401  404  200  200  200  200  200  200  401  401  401
PUT    /tools/{T}                           401  404  403  403  403  200  200  200  401  401  401
PATCH  /tools/{T}                           401  404  403  403  403  200  200  200  401  401  401
DELETE /tools/{T}                           401  404  403  403  204  204  204  204  401  401  401
DELETE /tools/{T}?hard_delete=true          401  404  403  403  403  403  204  204  401  401  401
GET    /tools/{T}/schema                    401  404  200  200  200  200  200  200  401  401  401
GET    /tools/{T}/parameters                401  404  200  200  200  200  200  200  401  401  401
POST   /tools/{T}/parameters                401  404  403  403  403  201  201  201  401  401  401
GET    /tools/parameters/{P}                401  404  200  200  200  200  200  200  401  401  401
PUT    /tools/parameters/{P}                401  404  403  403  403  200  200  200  401  401  401
PATCH  /tools/parameters/{P}                401  404  403  403  403  200  200  200  401  401  401
DELETE /tools/parameters/{P}                401  404  403  403  403  204  204  204  401  401  401
GET    /tools/{T}/configs                   401  404  200  200  200  200  200  200  401  401  401
POST   /tools/{T}/configs                   401  404  403  403  403  201  201  201  401  401  401
GET    /tools/{T}/configs/{K}               401  404  200  200  200  200  200  200  401  401  401
DELETE /tools/{T}/configs/{K}               401  404  403  403  403  204  204  204  401  401  401
GET    /roles                               401  200  200  200  200  200  200  200  401  401  401
POST   /roles                               401  403  403  403  403  403  201  201  401  401  401
GET    /roles/{R}                           401  404  200  404  404  404  200  200  401  401  401
PATCH  /roles/{R}                           401  404  403  404  404  404  200  200  401  401  401
DELETE /roles/{R}                           401  404  403  404  404  404  204  204  401  401  401
GET    /agents                              401  200  200  200  200  200  200  200  401  401  401
POST   /agents                              401  403  403  403  403  403  201  201  401  401  401
GET    /agents/{A}                          401  404  200  404  404  404  200  200  401  401  401
PATCH  /agents/{A}                          401  404  403  404  404  404  200  200  401  401  401
DELETE /agents/{A}                          401  404  403  404  404  404  204  204  401  401  401
GET    /agents/{A}/tokens                   401  404  403  404  404  404  200  200  401  401  401
POST   /agents/{A}/tokens                   401  404  403  404  404  404  201  201  401  401  401
DELETE /agents/{A}/tokens/{AT}              401  404  403  404  404  404  200  200  401  401  401
GET    /permissions                         401  403  403  403  403  403  200  200  401  401  401
POST   /permissions                         401  403  403  403  403  403  201  201  401  401  401
POST   /permissions/bulk                    401  403  403  403  403  403  201  201  401  401  401
GET    /permissions/{G}                     401  403  403  403  403  403  200  200  401  401  401
DELETE /permissions/{G}                     401  403  403  403  403  403  204  204  401  401  401
GET    /permissions/tool/{T}                401  403  403  403  403  403  200  200  401  401  401
GET    /permissions/role/{R}                401  403  403  403  403  403  200  200  401  401  401
GET    /registry/me                         401  200  200  200  200  200  200  200  401  401  401
GET    /registry/by-role/{R}                401  404  200  404  404  404  200  200  401  401  401
GET    /registry/by-role-name/readers       401  404  200  404  404  404  200  200  401  401  401
GET    /registry/check-permission/{T}/{R}   401  404  200  404  404  404  200  200  401  401  401
"""

GOVERNANCE_MATRIX = """
endpoint                                    anon none read exec mang medt appr revw padm supr revk
GET    /executions                          401  200  200  200  200  200  200  200  200  200  401
POST   /executions                          401  404  403  202  202  202  403  403  202  202  401
GET    /executions/export                   401  200  200  200  200  200  200  200  200  200  401
GET    /executions/tool/{T}                 401  404  200  200  200  200  200  200  200  200  401
GET    /executions/{E}                      401  404  404  200  404  404  404  200  200  200  401
GET    /executions/{E}/output               401  404  404  200  404  404  404  200  200  200  401
GET    /executions/{E}/output/content/0     401  404  404  200  404  404  404  200  200  200  401
POST   /executions/{EP}/cancel              401  404  404  200  404  404  404  403  200  200  401
GET    /approvals                           401  200  200  200  200  200  200  200  200  200  401
GET    /approvals/{AP}                      401  404  404  200  404  404  200  200  200  200  401
POST   /approvals/{AP}/approve              401  404  404  403  404  404  200  403  403  200  401
POST   /approvals/{AP}/reject               401  404  404  403  404  404  200  403  403  200  401
GET    /rate-limits                         401  200  200  200  200  200  200  200  200  200  401
POST   /rate-limits                         401  404  403  403  403  201  403  403  201  201  401
GET    /rate-limits/{L}                     401  404  200  200  200  200  200  200  200  200  401
PUT    /rate-limits/{L}                     401  404  403  403  403  403  403  403  200  200  401
PATCH  /rate-limits/{L}                     401  404  403  403  403  200  403  403  200  200  401
DELETE /rate-limits/{L}                     401  404  403  403  403  403  403  403  204  204  401
GET    /guards                              401  200  200  200  200  200  200  200  200  200  401
POST   /guards                              401  403  403  403  403  403  403  403  201  201  401
GET    /guards/{GD}                         401  404  200  200  200  200  200  200  200  200  401
PUT    /guards/{GD}                         401  404  403  403  403  403  403  403  200  200  401
PATCH  /guards/{GD}                         401  404  403  403  403  403  403  403  200  200  401
DELETE /guards/{GD}                         401  404  403  403  403  403  403  403  204  204  401
GET    /mcp-servers                         401  403  403  403  403  403  403  200  200  200  401
POST   /mcp-servers                         401  403  403  403  403  403  403  403  201  201  401
GET    /mcp-servers/{M}                     401  403  403  403  403  403  403  200  200  200  401
PUT    /mcp-servers/{M}                     401  403  403  403  403  403  403  403  200  200  401
PATCH  /mcp-servers/{M}                     401  403  403  403  403  403  403  403  200  200  401
DELETE /mcp-servers/{M}                     401  403  403  403  403  403  403  403  204  204  401
POST   /mcp-servers/{M}/sync                401  403  403  403  403  403  403  403  409  409  401
POST   /tools/import                        401  403  403  403  403  403  403  403  200  200  401
GET    /audit                               401  403  403  403  403  403  403  200  200  200  401
GET    /audit/export                        401  403  403  403  403  403  403  200  200  200  401
GET    /audit/head                          401  403  403  403  403  403  403  200  200  200  401
GET    /audit/verify                        401  403  403  403  403  403  403  200  200  200  401
GET    /stats                               401  200  200  200  200  200  200  200  200  200  401
GET    /toolsets                            401  403  403  403  403  403  403  200  200  200  401
POST   /toolsets                            401  403  403  403  403  403  403  403  201  201  401
GET    /toolsets/{TS}                       401  403  403  403  403  403  403  200  200  200  401
PATCH  /toolsets/{TS}                       401  403  403  403  403  403  403  403  200  200  401
DELETE /toolsets/{TS}                       401  403  403  403  403  403  403  403  204  204  401
GET    /tools/{T}/definition                401  404  403  403  200  200  403  200  200  200  401
POST   /tools/{T}/definition/approve        401  404  403  403  403  403  403  403  409  409  401
POST   /tools/{T}/definition/reject         401  404  403  403  403  403  403  403  409  409  401
GET    /mcp-servers/{M}/drift               401  403  403  403  403  403  403  200  200  200  401
"""

# Nothing listens there: a sync fails without leaving the machine.
MCP_URL = "http://127.0.0.1:9/mcp"

BODIES = {
    ("POST", "/tools"): {"name": "brand_new_tool", "type": "http"},
    ("PUT", "/tools/{T}"): {"name": "matrix_tool", "type": "http", "description": "replaced"},
    ("PATCH", "/tools/{T}"): {"description": "changed"},
    ("POST", "/tools/{T}/parameters"): {"name": "extra"},
    ("PUT", "/tools/parameters/{P}"): {"name": "q", "description": "replaced"},
    ("PATCH", "/tools/parameters/{P}"): {"description": "changed"},
    ("POST", "/tools/{T}/configs"): {"config_key": "new_key", "config_value": 1},
    ("POST", "/roles"): {"name": "brand-new-role"},
    ("PATCH", "/roles/{R}"): {"description": "changed"},
    ("POST", "/agents"): {"name": "brand-new-agent", "owner": "owner-olga"},
    ("PATCH", "/agents/{A}"): {"description": "changed"},
    ("POST", "/agents/{A}/tokens"): {"name": "matrix"},
    ("POST", "/permissions"): {"tool_id": "{T}", "role_id": "{R0}", "action": "read"},
    ("POST", "/permissions/bulk"): {"tool_id": "{T}", "role_ids": ["{R0}"], "action": "execute"},
    ("POST", "/executions"): {"tool_id": "{T}", "input_data": {"q": "x"}},
    ("POST", "/approvals/{AP}/approve"): {"reason": "looks fine"},
    ("POST", "/approvals/{AP}/reject"): {"reason": "not today"},
    ("POST", "/rate-limits"): {"tool_id": "{T}", "max_requests": 5, "time_window_seconds": 60},
    ("PUT", "/rate-limits/{L}"): {"scope": "global", "max_requests": 5, "time_window_seconds": 60},
    ("PATCH", "/rate-limits/{L}"): {"max_requests": 7},
    ("POST", "/guards"): {"name": "new-guard", "tool_id": "{T}", "kind": "pii", "action": "redact"},
    ("PUT", "/guards/{GD}"): {"name": "matrix-guard", "kind": "pii", "action": "block"},
    ("PATCH", "/guards/{GD}"): {"action": "flag"},
    ("POST", "/mcp-servers"): {"name": "new_mcp", "transport": "streamable_http", "url": MCP_URL},
    ("PUT", "/mcp-servers/{M}"): {
        "name": "matrix_mcp",
        "transport": "streamable_http",
        "url": MCP_URL,
    },
    ("PATCH", "/mcp-servers/{M}"): {"description": "changed"},
    ("POST", "/toolsets"): {"name": "Ops", "slug": "ops", "tool_ids": ["{T}"]},
    ("PATCH", "/toolsets/{TS}"): {"description": "changed"},
    ("POST", "/tools/{T}/definition/approve"): {"reason": "read the diff"},
    ("POST", "/tools/{T}/definition/reject"): {"reason": "read the diff"},
    ("POST", "/tools/import"): {"content": "tools:\n  - name: imported_tool\n    type: http\n"},
}


def parse_matrix(table: str):
    header, *lines = table.strip().splitlines()
    principals = header.split()[1:]
    cases = []
    for method, path, *codes in (line.split() for line in lines):
        assert len(codes) == len(principals), (method, path)
        expected = dict(zip(principals, map(int, codes), strict=True))
        cases.append(pytest.param(method, path, expected, id=f"{method} {path}"))
    return cases


@pytest.fixture(scope="module")
def _world(django_db_setup, django_db_blocker):
    """The world, built once for the module inside a transaction rolled back at its end
    (each test runs in a savepoint of it, as under Django's ``setUpTestData``): the cast,
    a tool, its roles and agents and their tokens."""
    with django_db_blocker.unblock(), transaction.atomic():
        owner = make_user("owner-olga")
        staff_user = make_user("alice-staff", is_staff=True)
        staff_user.groups.add(
            make_role(
                "platform-admin",
                role_services.PLATFORM_ADMIN_PERMISSIONS,
                all_tools_action="manage",
            )
        )
        superuser = make_user("root", is_staff=True, is_superuser=True)
        yield build_world(owner, staff_user, superuser)
        transaction.set_rollback(True)


@pytest.fixture
def world(_world, db):
    """The module's world, its objects read afresh: one a test changed through a service
    (its rows rolled back with the test's savepoint) is as its rows are for the next."""
    users = [user for user in _world["users"].values() if user is not None]
    for obj in [_world["tool"], *_world["agents"].values(), *_world["roles"].values(), *users]:
        obj.refresh_from_db()
    return _world


def build_world(owner, staff_user, superuser):
    tool = tool_services.tool_create(actor=None, name="matrix_tool", type="http")
    param = tool_services.parameter_create(actor=None, tool=tool, name="q")
    tool_services.config_set(
        actor=None, tool=tool, config_key="api_key", config_value="k", is_secret=True
    )
    roles = {}
    for name, action in (("readers", "read"), ("executors", "execute"), ("managers", "manage")):
        roles[name] = role_services.role_create(actor=None, name=name)
        grant_services.grant_create(actor=None, role=roles[name], action=action, tool=tool)
    roles["nobody"] = role_services.role_create(actor=None, name="nobody")
    roles["editors"] = role_services.role_create(actor=None, name="editors")
    grant_services.grant_create(actor=None, role=roles["editors"], action="manage", tool=tool)
    roles["editors"].permissions.add(
        *role_services.permissions_by_label(permissions_of(["edit_tools", "rate_limits"]))
    )

    def agent(name, role):
        a = agent_services.agent_create(
            actor=None, name=name, owner=owner, role_ids=[roles[role].pk]
        )
        return a

    agents = {
        "none": agent("agent-none", "nobody"),
        "read": agent("agent-read", "readers"),
        "exec": agent("agent-exec", "executors"),
        "mang": agent("agent-mang", "managers"),
        "medt": agent("agent-medt", "editors"),
        "inac": agent("agent-inac", "managers"),
    }
    tokens = {key: make_token(a.user) for key, a in agents.items()}
    tokens["padm"] = make_token(staff_user)
    tokens["supr"] = make_token(superuser)
    tokens["revk"] = make_token(agents["mang"].user, name="revoked")
    ApiToken.objects.filter(name="revoked").update(revoked_at=timezone.now())
    tokens["expd"] = make_token(
        agents["mang"].user, name="expired", expires_at=timezone.now() - timedelta(seconds=1)
    )
    agent_services.agent_update(actor=None, agent=agents["inac"], data={"is_active": False})
    agent_token = ApiToken.objects.filter(user=agents["read"].user).first()
    grant = roles["readers"].tool_grants.get()
    ids = {
        "{T}": str(tool.pk),
        "{P}": str(param.pk),
        "{K}": "api_key",
        "{R}": str(roles["readers"].pk),
        "{R0}": roles["nobody"].pk,
        "{A}": str(agents["read"].pk),
        "{AT}": str(agent_token.pk),
        "{G}": str(grant.pk),
    }
    users = {key: a.user for key, a in agents.items()}
    users.update({"padm": staff_user, "supr": superuser, "system": None})
    return {
        "tokens": tokens,
        "ids": ids,
        "tool": tool,
        "agents": agents,
        "roles": roles,
        "users": users,
    }


@pytest.fixture
def governed_world(world, reviewer_user, approver_user, approvers_role):
    """The world plus a call waiting for approval, a finished call, a limit and an MCP server.

    The calls are the execute agent's; the approver may approve calls of T.
    """
    tool, caller = world["tool"], world["agents"]["exec"]
    Tool.objects.filter(pk=tool.pk).update(requires_approval=True)
    grant_services.grant_create(actor=None, role=approvers_role, action="approve", tool=tool)
    call = {
        "tool": tool,
        "tool_name": tool.name,
        "agent": caller,
        "principal": caller.user,
        "principal_name": caller.user.username,
    }
    pending = execution_request(user=caller.user, tool_ref=str(tool.pk), arguments={"q": "x"})
    approval = pending.approval
    done = Execution.objects.create(  # an MCP tool's answer: its content blocks are served too
        status="succeeded",
        input_data={"q": "y"},
        output_data={"content": [{"type": "text", "text": "ok"}]},
        **{**call, "tool_type": "mcp"},
    )
    rule = limit_services.rate_limit_create(
        actor=None, tool=tool, scope="global", max_requests=100, time_window_seconds=3600
    )
    server = mcp_services.mcp_server_create(
        actor=None, name="matrix_mcp", transport="streamable_http", url=MCP_URL
    )
    toolset = toolset_services.toolset_create(
        actor=None, name="Matrix", slug="matrix", tools=[tool]
    )
    guard = guard_services.guard_create(
        actor=None, tool=tool, name="matrix-guard", kind="pii", action="redact"
    )
    tokens = {
        **world["tokens"],
        "appr": make_token(approver_user),
        "revw": make_token(reviewer_user),
    }
    ids = {
        **world["ids"],
        "{E}": str(done.pk),
        "{EP}": str(pending.pk),
        "{AP}": str(approval.pk),
        "{L}": str(rule.pk),
        "{M}": str(server.pk),
        "{TS}": str(toolset.pk),
        "{GD}": str(guard.pk),
    }
    return {**world, "tokens": tokens, "ids": ids}


def fill(value, ids):
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        for key, real in ids.items():
            value = value.replace(key, str(real))
        return value
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


def check_row(world, method, path, expected):
    url = "/api/v1" + fill(path, world["ids"])
    body = fill(BODIES.get((method, path)), world["ids"])
    mismatches = []
    for principal, status in expected.items():
        client = APIClient()
        if principal != "anon":
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][principal]}")
        # Each cell is rolled back so a destructive call cannot change the next cell.
        savepoint = transaction.savepoint()
        try:
            response = client.generic(
                method,
                url,
                data=None if body is None else json.dumps(body),
                content_type="application/json",
            )
        finally:
            transaction.savepoint_rollback(savepoint)
        if response.status_code != status:
            content = b"".join(response) if response.streaming else response.content
            mismatches.append((principal, status, response.status_code, content[:200]))
        elif status >= 400:
            error = response.json()["error"]
            assert error["code"] and error["message"], (principal, error)
    assert not mismatches, mismatches


@pytest.mark.parametrize(("method", "path", "expected"), parse_matrix(MATRIX))
def test_matrix(world, method, path, expected):
    check_row(world, method, path, expected)


@pytest.mark.parametrize(("method", "path", "expected"), parse_matrix(GOVERNANCE_MATRIX))
def test_governance_matrix(governed_world, method, path, expected):
    check_row(governed_world, method, path, expected)


# Agents' owners (people without roles): ownr owns every agent of the cast (A among
# them), othr owns another agent only. An owner manages her agent's tokens and nothing
# else of it (registry.policy: token.write lets the owner, agent.write does not).
OWNER_MATRIX = """
endpoint                                    ownr othr
GET    /agents/{A}                          200  404
PATCH  /agents/{A}                          403  404
DELETE /agents/{A}                          403  404
GET    /agents/{A}/tokens                   200  404
POST   /agents/{A}/tokens                   201  404
DELETE /agents/{A}/tokens/{AT}              200  404
POST   /agents                              403  403
POST   /roles                               403  403
PATCH  /roles/{R}                           404  404
"""


@pytest.fixture
def owners_world(world):
    otto = make_user("owner-otto")
    agent_services.agent_create(actor=None, name="agent-otto", owner=otto)
    owner = world["agents"]["read"].owner
    tokens = {**world["tokens"], "ownr": make_token(owner), "othr": make_token(otto)}
    return {**world, "tokens": tokens}


@pytest.mark.parametrize(("method", "path", "expected"), parse_matrix(OWNER_MATRIX))
def test_owner_matrix(owners_world, method, path, expected):
    check_row(owners_world, method, path, expected)


# Every route under /api/v1/ has a row: a new endpoint cannot ship without its column of answers.

# A value of the right shape for each placeholder, so the tables' paths resolve offline.
SAMPLE_IDS = {
    **dict.fromkeys(
        ["{T}", "{P}", "{A}", "{G}", "{E}", "{EP}", "{AP}", "{L}", "{M}", "{TS}", "{GD}"],
        str(uuid.UUID(int=1)),
    ),
    **dict.fromkeys(["{R}", "{AT}"], "1"),
    "{K}": "api_key",
}
# Django answers these for every view; they are not access decisions.
FRAMEWORK_METHODS = {"options", "head"}


def url_patterns(patterns=None, prefix=""):
    """(route, view) for every URL pattern, walking the includes."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from url_patterns(pattern.url_patterns, route)
        else:
            yield route, pattern.callback


def api_routes():
    """(method, route) under /api/v1/, the methods being the handlers each view defines."""
    for route, callback in url_patterns():
        if not route.startswith("api/v1/"):
            continue
        view = getattr(callback, "cls", None)
        assert view is not None, f"{route}: not a DRF APIView, its methods are unknown"
        for method in set(view.http_method_names) - FRAMEWORK_METHODS:
            if hasattr(view, method):
                yield method.upper(), route


def tabled_routes():
    for table in (MATRIX, GOVERNANCE_MATRIX):
        for case in parse_matrix(table):
            method, path, _ = case.values
            url = "/api/v1" + fill(path.split("?")[0], SAMPLE_IDS)
            yield method, resolve(url).route


def test_every_api_route_and_method_has_a_row_in_an_authorization_table():
    missing = sorted(set(api_routes()) - set(tabled_routes()), key=lambda item: item[::-1])
    assert not missing, f"no row in an authorization table for: {missing}"


# Nothing reveals a tool the caller may not read.

HIDDEN = "hidden_payroll_export"


@pytest.fixture
def hidden(world):
    return tool_services.tool_create(
        actor=None,
        name=HIDDEN,
        type="database",
        description="zebra-unique-words",
        tool_metadata={"category": "secret-cat"},
    )


AGENTS = ["none", "read", "exec", "mang"]


@pytest.mark.parametrize(
    "query", ["?search=payroll", "?search=zebra", "?category=secret-cat", "?tool_type=database"]
)
@pytest.mark.parametrize("principal", AGENTS)
def test_no_search_or_filter_finds_a_hidden_tool(world, hidden, principal, query):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][principal]}")
    body = client.get("/api/v1/tools" + query).json()
    assert HIDDEN not in str(body)
    assert body["count"] == 0


@pytest.mark.parametrize("principal", AGENTS)
def test_hidden_tool_is_invisible_everywhere(world, hidden, principal):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][principal]}")
    assert HIDDEN not in str(client.get("/api/v1/tools").json())
    missing = client.get(f"/api/v1/tools/{uuid.uuid4()}")
    for suffix in ("", "/schema", "/parameters", "/configs", "/configs/x"):
        response = client.get(f"/api/v1/tools/{hidden.pk}{suffix}")
        assert response.status_code == 404
        if suffix == "":
            assert response.json() == missing.json()
    for fmt in ("raw", "openai", "anthropic", "gemini", "mcp"):
        assert HIDDEN not in str(client.get(f"/api/v1/registry/me?format={fmt}").json())
    role_id = world["ids"]["{R}"]
    check = client.get(f"/api/v1/registry/check-permission/{hidden.pk}/{role_id}")
    assert check.status_code == 404
    assert check.json() == {
        "error": {"code": "tool_not_found", "message": "Tool not found.", "details": None}
    }


def test_platform_admin_sees_hidden_tool(world, hidden):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens']['padm']}")
    assert client.get(f"/api/v1/tools/{hidden.pk}").status_code == 200
