"""A tool registered as the seed's catalog writes it runs as the seed says (Credential configs)."""

from __future__ import annotations

import json

import pytest

from registry.models import Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True)]

KEY = "seed-canary-api-key-7Qx2"


@pytest.mark.parametrize("spelling", ["http", "HTTP"])
def test_a_seed_web_search_tool_sends_its_api_key_as_a_bearer_token(
    upstream, allow_loopback, eager_tasks, staff_client, spelling
):
    created = staff_client.post(
        "/api/v1/tools",
        {
            "name": "web_search",
            "description": "Search the web.",
            "type": spelling,
            "parameters": [
                {
                    "name": "query",
                    "parameter_type": "input",
                    "type": "string",
                    "required": True,
                },
                {"name": "limit", "type": "integer", "default_value": "5"},
            ],
            "configs": [
                {"config_key": "base_url", "config_value": upstream.url},
                {"config_key": "endpoint", "config_value": "/echo"},
                {"config_key": "auth_type", "config_value": "bearer_token"},
                {"config_key": "api_key", "config_value": KEY, "is_secret": True},
            ],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["type"] == "http"
    role = role_services.role_create(actor=None, name="searchers")
    tool = Tool.objects.get(pk=created.json()["id"])
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    agent = agent_services.agent_create(
        actor=None, name="agent-search", owner=make_user("owner-sam"), role_ids=[role.pk]
    )

    response = token_client(agent.user).post(
        "/api/v1/executions",
        {"tool": "web_search", "input_data": {"query": "toolhub"}, "wait": True},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "succeeded", body
    assert upstream.last.headers["authorization"] == f"Bearer {KEY}"
    assert upstream.last.query == {"query": ["toolhub"], "limit": ["5"]}
    assert KEY not in json.dumps(body)
