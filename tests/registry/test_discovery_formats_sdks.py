"""Every tool list ToolHub hands out is one its provider takes: checked with the providers'
own SDK types (offline) and the rules their APIs add to them.

The catalog is the demo's plus tools using what a schema may say: enums of strings,
integers and numbers, formats, anyOf and oneOf, const, nested objects and arrays,
objects and arrays said no more of, nullable values, constraints some provider has
no word for, a tool without inputs and names a provider cannot take as they are.
"""

from __future__ import annotations

import re

import mcp.types
import pytest
from anthropic.types import ToolParam
from django.core.management import call_command
from google.genai import types as gemini
from jsonschema import Draft202012Validator
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import TypeAdapter

from registry import demo
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _param(name: str, kind: str, fragment: dict | None = None, **fields) -> dict:
    return {"name": name, "type": kind, "json_schema": fragment or {}, **fields}


NESTED = {
    "properties": {
        "owner": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "scores": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "number"}},
                },
            },
            "required": ["name"],
        },
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"qty": {"type": "integer", "enum": [1, 5, 10]}},
                "additionalProperties": {"type": "string"},
            },
        },
        "anything": {},
        "maybe": {"type": ["string", "null"]},
        "either": {"type": ["integer", "array"], "items": {"type": "string"}},
    },
    "required": ["owner"],
}

EXTRA_TOOLS = [
    {
        "name": "enum_kinds",
        "parameters": [
            _param("level", "integer", {"enum": [1, 2, 3]}, required=True),
            _param("ratio", "number", {"enum": [0.5, 1.5, 2]}),
            _param("mode", "string", {"enum": ["fast", "slow"]}, default="fast"),
            _param("flag", "boolean", {"enum": [True]}),
            _param("nullable_choice", "string", {"enum": ["x", None]}),
        ],
    },
    {
        "name": "formats_and_constants",
        "parameters": [
            _param("email", "string", {"format": "email"}),
            _param("when", "string", {"format": "date-time"}),
            _param("day", "string", {"format": "date"}),
            _param("id", "string", {"format": "uuid", "pattern": "^[0-9a-f-]{36}$"}),
            _param("big", "integer", {"format": "int64", "minimum": 0}),
            _param("ratio", "number", {"format": "float", "exclusiveMinimum": 0}),
            _param("kind", "string", {"const": "invoice"}, required=True),
            _param("version", "integer", {"const": 2}),
        ],
    },
    {
        "name": "choices",
        "parameters": [
            _param("ref", "string", {"anyOf": [{"format": "uuid"}, {"pattern": "^[a-z]+$"}]}),
            _param("amount", "number", {"oneOf": [{"maximum": 0}, {"minimum": 100}]}),
            _param("code", "integer", {"multipleOf": 5, "not": {"const": 0}}),
            _param("gate", "object", {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        ],
    },
    {
        "name": "nested_shapes",
        "parameters": [
            _param("order", "object", NESTED, required=True),
            _param("free", "object", description="Any object."),
            _param("map", "object", {"additionalProperties": {"type": "integer"}}),
            _param("list", "array"),
            _param("unique", "array", {"items": {"type": "string"}, "uniqueItems": True}),
            _param("pair", "array", {"prefixItems": [{"type": "string"}, {"type": "integer"}]}),
            _param("nothing", "null"),
        ],
    },
    {"name": "no_inputs", "parameters": []},
    {"name": "2fa-crm-lookup", "parameters": [_param("user", "string", required=True)]},
    {"name": "9" * 64, "parameters": [_param("q", "string")]},
]


@pytest.fixture
def lists(db):
    """``{format: the tool list}`` for an agent that may execute the whole catalog."""
    call_command("seed_demo", verbosity=0)
    for spec in EXTRA_TOOLS:
        tool_services.tool_create(actor=None, type="http", description="A test tool.", **spec)
    role = role_services.role_create(actor=None, name="formats-everything")
    grant_services.grant_create(actor=None, role=role, action="execute")
    agent = agent_services.agent_create(
        actor=None, name="formats-agent", owner=make_user("formats-owner"), role_ids=[role.pk]
    )
    client = token_client(agent.user)

    def listed(fmt: str) -> list:
        response = client.get(f"/api/v1/registry/me?format={fmt}")
        assert response.status_code == 200
        return response.json()["tools"]

    return listed


def test_the_catalog_holds_every_demo_tool_and_every_extra_tool(lists):
    names = {tool["name"] for tool in lists("raw")}
    assert names == {t["name"] for t in demo.TOOLS} | {t["name"] for t in EXTRA_TOOLS}


def _same_after_validation(adapter: TypeAdapter, item: dict) -> None:
    # A TypedDict drops keys it does not know: equal means every key is the SDK's own.
    assert adapter.validate_python(item) == item


def _json_schema_object(schema: dict) -> None:
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"


def _arrays_have_items(schema, where="") -> None:
    """OpenAI refuses an array schema without items ("array schema missing items")."""
    if isinstance(schema, dict):
        kinds = schema.get("type")
        if "array" in (kinds if isinstance(kinds, list) else [kinds]):
            assert "items" in schema, where
        for key, value in schema.items():
            if key not in ("enum", "const", "default", "examples"):
                _arrays_have_items(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            _arrays_have_items(value, f"{where}/{index}")


OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MCP_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,128}")
GEMINI_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")


def test_every_openai_tool_is_one_the_openai_sdk_and_api_take(lists):
    adapter = TypeAdapter(ChatCompletionFunctionToolParam)
    for tool in lists("openai"):
        _same_after_validation(adapter, tool)
        function = tool["function"]
        assert OPENAI_NAME.fullmatch(function["name"])
        _json_schema_object(function["parameters"])
        _arrays_have_items(function["parameters"], function["name"])


def test_every_anthropic_tool_is_one_the_anthropic_sdk_and_api_take(lists):
    adapter = TypeAdapter(ToolParam)
    for tool in lists("anthropic"):
        _same_after_validation(adapter, tool)
        assert ANTHROPIC_NAME.fullmatch(tool["name"])
        _json_schema_object(tool["input_schema"])


def test_every_mcp_tool_is_one_the_mcp_sdk_takes(lists):
    for tool in lists("mcp"):
        model = mcp.types.Tool.model_validate(tool)
        assert model.model_dump(by_alias=True, exclude_none=True) == tool
        assert MCP_NAME.fullmatch(tool["name"])
        _json_schema_object(tool["inputSchema"])


# What Gemini's API takes beyond what its SDK types check (its OpenAPI 3.0 subset).
GEMINI_KEYS = {"type", "format", "title", "description", "nullable", "enum", "properties"}
GEMINI_KEYS |= {"required", "items", "minItems", "maxItems", "minLength", "maxLength"}
GEMINI_KEYS |= {"pattern", "minimum", "maximum", "minProperties", "maxProperties", "anyOf"}
GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "integer": {"int32", "int64"},
    "number": {"float", "double"},
}


def gemini_schema_problems(schema: dict, where: str = "") -> list[str]:
    problems = [f"{where}: {key} is not Gemini's" for key in set(schema) - GEMINI_KEYS]
    kind = schema.get("type")
    if kind is None and "anyOf" not in schema:
        problems.append(f"{where}: no type")
    if kind is not None and kind not in (
        "string",
        "number",
        "integer",
        "boolean",
        "array",
        "object",
    ):
        problems.append(f"{where}: type {kind!r}")
    if "enum" in schema and (
        kind != "string"
        or schema.get("format") != "enum"
        or not all(isinstance(v, str) for v in schema["enum"])
    ):
        problems.append(f"{where}: enum {schema['enum']!r} of type {kind!r}")
    if "format" in schema and schema["format"] not in GEMINI_FORMATS.get(kind, ()):
        problems.append(f"{where}: format {schema['format']!r} on {kind!r}")
    if kind == "object":
        properties = schema.get("properties") or {}
        if not properties:
            problems.append(f"{where}: an object without properties")
        if not set(schema.get("required", ())) <= set(properties):
            problems.append(f"{where}: required names no property")
        for name, sub in properties.items():
            problems += gemini_schema_problems(sub, f"{where}/{name}")
    if kind == "array":
        if not isinstance(schema.get("items"), dict):
            problems.append(f"{where}: an array without items")
        else:
            problems += gemini_schema_problems(schema["items"], f"{where}[]")
    for index, branch in enumerate(schema.get("anyOf") or ()):
        problems += gemini_schema_problems(branch, f"{where}|{index}")
    if "anyOf" in schema and not schema["anyOf"]:
        problems.append(f"{where}: an empty anyOf")
    return problems


def test_every_gemini_declaration_is_one_the_genai_sdk_and_api_take(lists):
    (tool,) = lists("gemini")
    # One Tool holds every declaration: one bad schema would make the whole list unusable.
    gemini.Tool.model_validate(tool)
    for declaration in tool["functionDeclarations"]:
        assert GEMINI_NAME.fullmatch(declaration["name"]), declaration["name"]
        if "parameters" in declaration:
            assert declaration["parameters"]["type"] == "object"
            assert gemini_schema_problems(declaration["parameters"], declaration["name"]) == []
