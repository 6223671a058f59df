"""registry/me in each provider's format, written out by hand, and bounded queries at scale."""

from __future__ import annotations

import jsonschema
import pytest

from registry.formats import provider_name
from registry.models import Tool, ToolGroupObjectPermission, ToolParameter
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_client(db):
    owner = make_user("owner")
    role = role_services.role_create(actor=None, name="support")
    agent = agent_services.agent_create(actor=None, name="helper", owner=owner, role_ids=[role.pk])
    tool = tool_services.tool_create(
        actor=None,
        name="account_balance_lookup",
        type="http",
        description="Look up a balance.",
        tool_metadata={"safety": "read_only"},
        parameters=[
            {
                "name": "account_id",
                "type": "string",
                "required": True,
                "description": "Account id.",
                "json_schema": {"pattern": "^[0-9]+$"},
            },
            {
                "name": "customer_token",
                "type": "string",
                "required": True,
                "description": "Session token.",
            },
            {
                "name": "currency",
                "type": "string",
                "default": "USD",
                "json_schema": {"enum": ["USD", "EUR"]},
            },
        ],
        configs=[
            {
                "config_key": "headers_input_map",
                "config_value": {"customer_token": "X-Customer-Token"},
            }
        ],
    )
    readonly = tool_services.tool_create(actor=None, name="read_only_tool", type="http")
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    grant_services.grant_create(actor=None, role=role, action="read", tool=readonly)
    return token_client(agent.user)


SECRET_NOTE = "Per-call secret: sent to the upstream as a header, never stored or echoed."
SCHEMA = {
    "type": "object",
    "properties": {
        "account_id": {"type": "string", "pattern": "^[0-9]+$", "description": "Account id."},
        "customer_token": {
            "type": "string",
            "description": "Session token. " + SECRET_NOTE,
            "x-toolhub-secret": True,
        },
        "currency": {"type": "string", "enum": ["USD", "EUR"], "default": "USD"},
    },
    "required": ["account_id", "customer_token"],
    "additionalProperties": False,
}
NAME_MAP_KEY = "account_balance_lookup"


def test_openai(agent_client):
    body = agent_client.get("/api/v1/registry/me?format=openai").json()
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "account_balance_lookup",
                "description": "Look up a balance.",
                "parameters": SCHEMA,
            },
        }
    ]
    assert body["name_map"][NAME_MAP_KEY]["tool_name"] == "account_balance_lookup"


def test_anthropic(agent_client):
    body = agent_client.get("/api/v1/registry/me?format=anthropic").json()
    assert body["tools"] == [
        {
            "name": "account_balance_lookup",
            "description": "Look up a balance.",
            "input_schema": SCHEMA,
        }
    ]


def test_gemini(agent_client):
    body = agent_client.get("/api/v1/registry/me?format=gemini").json()
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "account_balance_lookup",
                    "description": "Look up a balance.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "account_id": {
                                "type": "string",
                                "pattern": "^[0-9]+$",
                                "description": "Account id.",
                            },
                            "customer_token": {
                                "type": "string",
                                "description": "Session token. " + SECRET_NOTE,
                            },
                            "currency": {
                                "type": "string",
                                "format": "enum",
                                "enum": ["USD", "EUR"],
                                "description": 'Default: "USD".',
                            },
                        },
                        "required": ["account_id", "customer_token"],
                    },
                }
            ]
        }
    ]


def test_mcp(agent_client):
    body = agent_client.get("/api/v1/registry/me?format=mcp").json()
    assert body["tools"] == [
        {
            "name": "account_balance_lookup",
            "description": "Look up a balance.",
            # MCP lists JSON Schema 2020-12 and says so.
            "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", **SCHEMA},
            "annotations": {"readOnlyHint": True, "destructiveHint": False},
        }
    ]


def test_raw_is_default_and_lists_secret_parameters(agent_client):
    body = agent_client.get("/api/v1/registry/me").json()
    assert body["format"] == "raw"
    (tool,) = body["tools"]
    assert tool["secret_parameters"] == ["customer_token"]
    # The schema an agent gets still validates real calls.
    jsonschema.validate({"account_id": "123", "customer_token": "t"}, tool["input_schema"])


def test_unknown_format_is_400(agent_client):
    response = agent_client.get("/api/v1/registry/me?format=cohere")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "format"


def test_names_are_the_tools_own_where_the_format_takes_them():
    for fmt in ("openai", "anthropic", "gemini", "mcp", "raw"):
        assert provider_name("a_b-c", fmt) == "a_b-c"
        assert provider_name("x" * 64, fmt) == "x" * 64
    for fmt in ("openai", "anthropic", "mcp", "raw"):
        assert provider_name("9lives", fmt) == "9lives"


def test_gemini_marks_a_name_it_cannot_take_with_a_dot_no_tool_name_has():
    assert provider_name("9lives", "gemini") == "_.9lives"
    assert provider_name("-x", "gemini") == "_.-x"
    long = "9" * 64
    marked = provider_name(long, "gemini")
    assert len(marked) == 64 and marked.startswith("_." + "9" * 45 + ".")
    assert marked != provider_name("9" * 63 + "8", "gemini")  # the digest keeps them apart


def test_inactive_tools_are_not_offered(agent_client):
    Tool.objects.filter(name="account_balance_lookup").update(is_active=False)
    assert agent_client.get("/api/v1/registry/me").json()["tools"] == []


def _catalog(size: int, role):
    tools = Tool.objects.bulk_create(Tool(name=f"bulk_{i:04d}", type="http") for i in range(size))
    ToolParameter.objects.bulk_create(
        ToolParameter(tool=t, name=f"p{j}", type="string") for t in tools for j in range(3)
    )
    from django.contrib.auth.models import Permission

    perm = Permission.objects.get(codename="execute_tool")
    ToolGroupObjectPermission.objects.bulk_create(
        ToolGroupObjectPermission(group=role, permission=perm, content_object=t) for t in tools
    )


def test_discovery_queries_stay_bounded(django_assert_max_num_queries):
    owner = make_user("owner")
    role = role_services.role_create(actor=None, name="bulk")
    agent = agent_services.agent_create(
        actor=None, name="bulk-agent", owner=owner, role_ids=[role.pk]
    )
    client = token_client(agent.user)
    _catalog(1000, role)
    # Auth (token + last_used) + roles + all-tools check + tools + 2 prefetches: constant in catalog size.
    with django_assert_max_num_queries(10):
        body = client.get("/api/v1/registry/me?format=openai").json()
    assert len(body["tools"]) == 1000
    with django_assert_max_num_queries(10):
        page = client.get("/api/v1/tools?page_size=200").json()
    assert page["count"] == 1000 and len(page["results"]) == 200


def test_the_secret_note_is_a_sentence_of_its_own(monkeypatch):
    from types import SimpleNamespace

    from registry import formats

    tool = SimpleNamespace(
        input_schema=lambda: {
            "type": "object",
            "properties": {"token": {"type": "string", "description": "session token"}},
        }
    )
    monkeypatch.setattr(formats, "secret_parameters", lambda t: ["token"])
    schema, _ = formats._marked_schema(tool)
    assert schema["properties"]["token"]["description"] == f"session token. {SECRET_NOTE}"


# Gemini takes an OpenAPI 3.0 subset; one schema outside it and the whole list is refused.


def _gemini_declaration(parameters: list[dict]) -> dict:
    """The Gemini declaration of a tool with ``parameters``, checked by the genai SDK."""
    from google.genai import types

    role = role_services.role_create(actor=None, name="gemini-callers")
    agent = agent_services.agent_create(
        actor=None, name="gemini-agent", owner=make_user("gemini-owner"), role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None, name="shaped", type="http", description="Shapes.", parameters=parameters
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    body = token_client(agent.user).get("/api/v1/registry/me?format=gemini").json()
    types.Tool.model_validate(body["tools"][0])
    (declaration,) = body["tools"][0]["functionDeclarations"]
    return declaration


def _accepted(arguments: dict, parameters: list[dict]):
    """What ToolHub makes of ``arguments`` as a Gemini model writes them for the tool."""
    from executions.validation import validate_arguments

    outcome = validate_arguments(arguments, Tool.objects.get(name="shaped").input_schema())
    assert outcome.ok, outcome.errors
    return outcome.value


def test_gemini_gets_an_integer_enum_as_strings_and_the_call_gets_integers():
    params = [{"name": "level", "type": "integer", "json_schema": {"enum": [1, 2, 3]}}]
    level = _gemini_declaration(params)["parameters"]["properties"]["level"]
    assert level == {
        "type": "string",
        "format": "enum",
        "enum": ["1", "2", "3"],
        "description": "A value of type integer, written as text.",
    }
    assert _accepted({"level": "2"}, params) == {"level": 2}


def test_gemini_gets_a_number_enum_and_a_const_as_string_enums():
    params = [
        {"name": "ratio", "type": "number", "json_schema": {"enum": [0.5, 1.5]}},
        {"name": "kind", "type": "string", "json_schema": {"const": "invoice"}},
    ]
    properties = _gemini_declaration(params)["parameters"]["properties"]
    assert properties["ratio"]["enum"] == ["0.5", "1.5"]
    assert properties["kind"] == {"type": "string", "format": "enum", "enum": ["invoice"]}
    assert _accepted({"ratio": "1.5", "kind": "invoice"}, params) == {
        "ratio": 1.5,
        "kind": "invoice",
    }


def test_gemini_gets_only_its_formats_and_the_rest_in_the_description():
    params = [
        {"name": "when", "type": "string", "json_schema": {"format": "date-time"}},
        {
            "name": "email",
            "type": "string",
            "description": "Mail",
            "json_schema": {"format": "email"},
        },
        {"name": "amount", "type": "number", "json_schema": {"exclusiveMinimum": 0, "maximum": 9}},
    ]
    properties = _gemini_declaration(params)["parameters"]["properties"]
    assert properties["when"] == {"type": "string", "format": "date-time"}
    assert properties["email"] == {
        "type": "string",
        "description": 'Mail. JSON Schema also requires: {"format": "email"}.',
    }
    assert properties["amount"] == {
        "type": "number",
        "maximum": 9,
        "description": 'JSON Schema also requires: {"exclusiveMinimum": 0}.',
    }


def test_gemini_asks_for_an_object_without_properties_as_json_text():
    params = [
        {"name": "free", "type": "object"},
        {"name": "list", "type": "array"},
        {
            "name": "pair",
            "type": "object",
            "json_schema": {"properties": {"a": {"type": "integer"}}},
        },
    ]
    properties = _gemini_declaration(params)["parameters"]["properties"]
    assert properties["free"] == {
        "type": "string",
        "description": "Give a JSON object, written as JSON text.",
    }
    assert properties["list"]["type"] == "string"
    assert properties["pair"] == {"type": "object", "properties": {"a": {"type": "integer"}}}
    value = _accepted({"free": '{"k": [1]}', "list": "[1, 2]"}, params)
    assert value == {"free": {"k": [1]}, "list": [1, 2]}


def test_a_tool_without_inputs_is_declared_to_gemini_without_parameters():
    assert _gemini_declaration([]) == {"name": "shaped", "description": "Shapes."}
