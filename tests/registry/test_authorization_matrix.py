"""Every endpoint by a fixed cast of principals → the expected status.

Read the table: one row per endpoint, one column per principal. Each cell runs
in its own transaction, so destructive calls don't affect the others.

Columns:
  anon  no credentials             none  agent with no grant
  read  agent whose role may read  exec  agent whose role may execute
  mang  agent whose role may manage (the tool T)
  padm  platform admin (person)    supr  superuser (person)
  revk  revoked token              expd  expired token
  inac  inactive agent (its role may manage T)
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import ApiToken
from registry.services import access as access_services
from registry.services import tools as tool_services
from tests.conftest import make_role
from tests.factories import make_token, make_user

MATRIX = """
endpoint                                    anon none read exec mang padm supr revk expd inac
GET    /tools                                401  200  200  200  200  200  200  401  401  401
POST   /tools                                401  403  403  403  403  201  201  401  401  401
GET    /tools/{T}                            401  404  200  200  200  200  200  401  401  401
PUT    /tools/{T}                            401  404  403  403  200  200  200  401  401  401
PATCH  /tools/{T}                            401  404  403  403  200  200  200  401  401  401
DELETE /tools/{T}                            401  404  403  403  204  204  204  401  401  401
DELETE /tools/{T}?hard_delete=true           401  404  403  403  403  204  204  401  401  401
GET    /tools/{T}/schema                     401  404  200  200  200  200  200  401  401  401
GET    /tools/{T}/parameters                 401  404  200  200  200  200  200  401  401  401
POST   /tools/{T}/parameters                 401  404  403  403  201  201  201  401  401  401
GET    /tools/parameters/{P}                 401  404  200  200  200  200  200  401  401  401
PATCH  /tools/parameters/{P}                 401  404  403  403  200  200  200  401  401  401
DELETE /tools/parameters/{P}                 401  404  403  403  204  204  204  401  401  401
GET    /tools/{T}/configs                    401  404  200  200  200  200  200  401  401  401
POST   /tools/{T}/configs                    401  404  403  403  201  201  201  401  401  401
GET    /tools/{T}/configs/{K}                401  404  200  200  200  200  200  401  401  401
DELETE /tools/{T}/configs/{K}                401  404  403  403  204  204  204  401  401  401
GET    /roles                                401  200  200  200  200  200  200  401  401  401
POST   /roles                                401  403  403  403  403  201  201  401  401  401
GET    /roles/{R}                            401  404  200  404  404  200  200  401  401  401
PATCH  /roles/{R}                            401  404  403  404  404  200  200  401  401  401
DELETE /roles/{R}                            401  404  403  404  404  204  204  401  401  401
GET    /agents                               401  200  200  200  200  200  200  401  401  401
POST   /agents                               401  403  403  403  403  201  201  401  401  401
GET    /agents/{A}                           401  404  200  404  404  200  200  401  401  401
PATCH  /agents/{A}                           401  404  403  404  404  200  200  401  401  401
DELETE /agents/{A}                           401  404  403  404  404  204  204  401  401  401
GET    /agents/{A}/tokens                    401  404  403  404  404  200  200  401  401  401
POST   /agents/{A}/tokens                    401  404  403  404  404  201  201  401  401  401
DELETE /agents/{A}/tokens/{AT}               401  404  403  404  404  200  200  401  401  401
GET    /permissions                          401  403  403  403  403  200  200  401  401  401
POST   /permissions                          401  403  403  403  403  201  201  401  401  401
POST   /permissions/bulk                     401  403  403  403  403  201  201  401  401  401
GET    /permissions/{G}                      401  403  403  403  403  200  200  401  401  401
DELETE /permissions/{G}                      401  403  403  403  403  204  204  401  401  401
GET    /permissions/tool/{T}                 401  403  403  403  403  200  200  401  401  401
GET    /permissions/role/{R}                 401  403  403  403  403  200  200  401  401  401
GET    /registry/me                          401  200  200  200  200  200  200  401  401  401
GET    /registry/by-role/{R}                 401  404  200  404  404  200  200  401  401  401
GET    /registry/by-role-name/readers        401  404  200  404  404  200  200  401  401  401
GET    /registry/check-permission/{T}/{R}    401  404  200  404  404  200  200  401  401  401
"""

PRINCIPALS = ["anon", "none", "read", "exec", "mang", "padm", "supr", "revk", "expd", "inac"]

BODIES = {
    ("POST", "/tools"): {"name": "brand_new_tool", "type": "http"},
    ("PUT", "/tools/{T}"): {"name": "matrix_tool", "type": "http", "description": "replaced"},
    ("PATCH", "/tools/{T}"): {"description": "changed"},
    ("POST", "/tools/{T}/parameters"): {"name": "extra"},
    ("PATCH", "/tools/parameters/{P}"): {"description": "changed"},
    ("POST", "/tools/{T}/configs"): {"config_key": "new_key", "config_value": 1},
    ("POST", "/roles"): {"name": "brand-new-role"},
    ("PATCH", "/roles/{R}"): {"description": "changed"},
    ("POST", "/agents"): {"name": "brand-new-agent", "owner": "owner-olga"},
    ("PATCH", "/agents/{A}"): {"description": "changed"},
    ("POST", "/agents/{A}/tokens"): {"name": "matrix"},
    ("POST", "/permissions"): {"tool_id": "{T}", "role_id": "{R0}", "action": "read"},
    ("POST", "/permissions/bulk"): {"tool_id": "{T}", "role_ids": ["{R0}"], "action": "execute"},
}


def parse_matrix():
    rows = [line.split() for line in MATRIX.strip().splitlines()[1:]]
    cases = []
    for method, path, *codes in rows:
        assert len(codes) == len(PRINCIPALS), (method, path)
        expected = dict(zip(PRINCIPALS, map(int, codes), strict=True))
        cases.append(pytest.param(method, path, expected, id=f"{method} {path}"))
    return cases


@pytest.fixture
def world(db):
    owner = make_user("owner-olga")
    admin_person = make_user("pat-admin", is_staff=True)
    admin_person.groups.add(
        make_role(
            "platform-admin", access_services.PLATFORM_ADMIN_PERMISSIONS, all_tools_action="manage"
        )
    )
    superuser = make_user("sam-super", is_staff=True, is_superuser=True)
    tool = tool_services.tool_create(actor=None, name="matrix_tool", type="http")
    param = tool_services.parameter_create(actor=None, tool=tool, name="q")
    tool_services.config_set(
        actor=None, tool=tool, config_key="api_key", config_value="k", is_secret=True
    )
    roles = {}
    for name, action in (("readers", "read"), ("executors", "execute"), ("managers", "manage")):
        roles[name] = access_services.role_create(actor=None, name=name)
        access_services.grant_create(actor=None, role=roles[name], action=action, tool=tool)
    roles["nobody"] = access_services.role_create(actor=None, name="nobody")

    def agent(name, role):
        a = access_services.agent_create(
            actor=None, name=name, owner=owner, role_ids=[roles[role].pk]
        )
        return a

    agents = {
        "none": agent("agent-none", "nobody"),
        "read": agent("agent-read", "readers"),
        "exec": agent("agent-exec", "executors"),
        "mang": agent("agent-mang", "managers"),
        "inac": agent("agent-inac", "managers"),
    }
    tokens = {key: make_token(a.user) for key, a in agents.items()}
    tokens["padm"] = make_token(admin_person)
    tokens["supr"] = make_token(superuser)
    tokens["revk"] = make_token(agents["mang"].user, name="revoked")
    ApiToken.objects.filter(name="revoked").update(revoked_at=timezone.now())
    tokens["expd"] = make_token(
        agents["mang"].user, name="expired", expires_at=timezone.now() - timedelta(seconds=1)
    )
    access_services.agent_update(actor=None, agent=agents["inac"], data={"is_active": False})
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
    return {"tokens": tokens, "ids": ids, "tool": tool}


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


@pytest.mark.parametrize(("method", "path", "expected"), parse_matrix())
def test_matrix(world, method, path, expected):
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
            mismatches.append((principal, status, response.status_code, response.content[:200]))
        elif status >= 400:
            error = response.json()["error"]
            assert error["code"] and error["message"], (principal, error)
    assert not mismatches, mismatches


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


@pytest.mark.parametrize("principal", ["none", "read", "exec", "mang"])
def test_hidden_tool_is_invisible_everywhere(world, hidden, principal):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][principal]}")
    for query in (
        "",
        "?search=payroll",
        "?search=zebra",
        "?category=secret-cat",
        "?tool_type=database",
    ):
        body = client.get("/api/v1/tools" + query).json()
        assert HIDDEN not in str(body), query
        if query:
            assert body["count"] == 0, query
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
