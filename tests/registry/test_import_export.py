"""Importing catalog files and OpenAPI documents, exporting the catalog, and the round trip."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from registry.importers.export import export_catalog
from registry.importers.run import import_content
from registry.models import AuditEvent, MCPServer, Tool, ToolConfig
from registry.services import mcp as mcp_services
from registry.services.catalog import tool_upsert
from registry.services.tools import config_set, parameter_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _stdio_commands(settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = ["/usr/bin/mcp-files"]  # mcp.yml's stdio server


DATA = Path(__file__).resolve().parents[1] / "data"
CANARY = f"import-canary-{uuid.uuid4().hex}"
PETS = {"base_url": "https://pets.example/v1", "namespace": "pets"}


def read(name: str) -> str:
    return (DATA / name).read_text()


def run(name_or_text: str, **kwargs):
    text = read(name_or_text) if name_or_text.endswith((".yml", ".yaml", ".json")) else name_or_text
    return import_content(text, actor=None, **kwargs)


def params(tool: Tool) -> dict:
    return {
        p.name: {
            "type": p.type,
            "required": p.required,
            "default": p.default if p.has_default else "<none>",
            "json_schema": p.json_schema,
            "kind": p.parameter_type,
        }
        for p in tool.parameters.order_by("position")
    }


def configs(tool: Tool) -> dict:
    return {c.config_key: c.plain_value for c in tool.configs.all() if not c.is_secret}


# --------------------------------------------------------------------------- tools.yml


def test_tools_yml_creates_tools_parameters_and_configs():
    report = run("tools.yml")
    assert report.ok, report.text()
    assert report.written and report.format == "tools"
    assert report.names("created") == ["weather_lookup", "fx_convert"]

    weather = Tool.objects.get(name="weather_lookup")
    assert weather.type == "python"  # inferred from module/function
    assert weather.tool_metadata == {"category": "weather", "speed": "fast", "safety": "read_only"}
    assert configs(weather) == {"module": "acme.weather", "function": "get_weather"}
    assert params(weather) == {
        "city": {
            "type": "string",
            "required": True,
            "default": "<none>",
            "json_schema": {},
            "kind": "input",
        },
        "units": {
            "type": "string",
            "required": False,
            "default": "metric",
            "json_schema": {"enum": ["metric", "imperial"]},
            "kind": "input",
        },
        # ["integer", "null"]: one type, null dropped (leaving it out means the same)
        "days": {
            "type": "integer",
            "required": False,
            "default": "<none>",
            "json_schema": {"minimum": 1, "maximum": 7},
            "kind": "input",
        },
    }
    assert weather.parameters.get(name="city").description == "City name."
    assert weather.input_schema()["required"] == ["city"]

    fx = Tool.objects.get(name="fx_convert")
    assert fx.type == "http"
    assert configs(fx) == {
        "base_url": "https://fx.example",
        "endpoint": "/convert",
        "method": "GET",
    }
    assert params(fx)["from"]["json_schema"] == {"pattern": "^[A-Z]{3}$"}

    # Unknown keys are reported with their line, not silently dropped.
    assert [(p.path, p.line) for p in report.unknown_keys] == [("/tools/1/owner", 28)]
    assert any("api_key" in p.message for p in report.warnings)
    text = report.text()
    assert "line 28, /tools/1/owner: unknown key 'owner'" in text
    # Python modules named in the file are recorded, never imported.
    import sys

    assert "acme" not in sys.modules


def test_reimport_is_idempotent_and_silent():
    assert run("tools.yml").ok
    events = AuditEvent.objects.count()
    again = run("tools.yml")
    assert again.ok
    assert again.counts() == {"created": 0, "updated": 0, "unchanged": 2, "deactivated": 0}
    assert AuditEvent.objects.count() == events


def test_reimport_reports_what_changed():
    assert run("tools.yml").ok
    text = read("tools.yml").replace("Current weather for a city.", "Weather now.")
    text = text.replace("maximum: 7", "maximum: 14").replace("          default: metric\n", "")
    report = run(text)
    assert report.ok, report.text()
    item = next(i for i in report.items if i["name"] == "weather_lookup")
    assert item["action"] == "updated"
    assert "description changed" in item["changes"]
    assert any("units changed (default)" in c for c in item["changes"])
    assert any("days changed (json_schema)" in c for c in item["changes"])
    weather = Tool.objects.get(name="weather_lookup")
    assert weather.description == "Weather now."
    assert not weather.parameters.get(name="units").has_default


def test_dry_run_reports_and_writes_nothing():
    events = AuditEvent.objects.count()
    report = run("tools.yml", dry_run=True)
    assert report.ok and not report.written
    assert report.names("created") == ["weather_lookup", "fx_convert"]
    assert "Dry run: nothing was written." in report.text()
    assert not Tool.objects.exists()
    assert AuditEvent.objects.count() == events


# --------------------------------------------------------------------------- mcp.yml and single tools


def test_mcp_yml_creates_servers():
    report = run("mcp.yml")
    assert report.ok, report.text()
    assert report.format == "mcp"
    github = MCPServer.objects.get(name="github")
    assert github.transport == "streamable_http"
    assert github.token_env_var == "GITHUB_MCP_TOKEN" and not github.has_auth_token
    assert github.tools_allowed == ["search_repositories", "get_issue"]
    local = MCPServer.objects.get(name="local_files")
    assert local.transport == "stdio"
    assert local.args == ["--root", "/srv/data"] and local.stored_env() == {"LOG_LEVEL": "warning"}
    assert [(p.path, p.line) for p in report.unknown_keys] == [("/mcp_servers/1/region", 14)]
    assert run("mcp.yml").counts()["unchanged"] == 2


def test_an_imported_stdio_server_must_run_an_allowed_command():
    text = (
        "mcp_servers:\n  - name: s1\n    transport: stdio\n    command: /bin/sh\n"
        '    args: ["-c", "id"]\n'
    )
    report = run(text)
    assert not report.ok
    (error,) = report.errors
    assert "TOOLHUB_MCP_STDIO_COMMANDS" in error.message
    assert not MCPServer.objects.exists()


def test_an_imported_server_tool_prefix_is_checked_and_kept():
    bad = "mcp_servers:\n  - name: s1\n    url: https://s1.example/mcp\n    tool_prefix: a b\n"
    report = run(bad)
    assert not report.ok
    (error,) = report.errors
    assert error.path.endswith("/tool_prefix") and "40 characters" in error.message
    report = run(bad.replace("a b", '"s1-"'))
    assert report.ok, report.text()
    assert MCPServer.objects.get(name="s1").listed_prefix == "s1-"
    assert "tool_prefix: s1-" in export_catalog()


def test_mcp_yml_token_variable_must_be_allowed():
    text = (
        "mcp_servers:\n  - name: s1\n    url: https://s1.example/mcp\n"
        "    auth:\n      token_env_var: DATABASE_URL\n"
    )
    report = run(text)
    assert not report.ok
    (error,) = report.errors
    assert "DATABASE_URL" in error.message and "own settings" in error.message
    assert not MCPServer.objects.exists()


def test_mcp_yml_inline_token_is_stored_encrypted_and_never_reported():
    text = f"mcp_servers:\n  - name: s1\n    url: https://s1.example/mcp\n    auth:\n      token: {CANARY}\n"
    report = run(text)
    assert report.ok, report.text()
    server = MCPServer.objects.get(name="s1")
    assert server.stored_auth_token() == CANARY
    assert CANARY not in json.dumps(report.as_dict())
    assert CANARY not in json.dumps(list(AuditEvent.objects.values("before", "after")))
    assert run(text).counts()["unchanged"] == 1
    assert CANARY not in export_catalog()


def test_single_tool_file():
    report = run("single_tool.yml")
    assert report.ok, report.text()
    assert report.format == "single"
    tool = Tool.objects.get(name="summarize_text")
    assert tool.max_concurrency == 1  # disable_parallel
    assert tool.type == "python"
    assert params(tool)["max_words"]["default"] == 100
    assert run("single_tool.yml").counts()["unchanged"] == 1
    # disable_parallel: false lifts the limit.
    relaxed = read("single_tool.yml").replace("disable_parallel: true", "disable_parallel: false")
    assert run(relaxed).ok
    tool.refresh_from_db()
    assert tool.max_concurrency is None


def test_single_tool_stream_and_conflicts():
    text = (
        "type: tool\nname: a\ntool_type: http\ndescription: A\n"
        "---\n"
        "type: tool\nname: b\ntool_type: http\nmax_concurrency: 3\ndisable_parallel: true\n"
        "---\n"
        "type: tool\nname: a\ntool_type: http\n"
    )
    report = run(text)
    assert not report.ok
    messages = [str(p) for p in report.errors]
    assert "line 10, /1/disable_parallel: contradicts max_concurrency (true means 1)" in messages
    assert any("/2/name" in m and "already defined at line 1" in m for m in messages), messages
    assert not Tool.objects.exists()


# --------------------------------------------------------------------------- malformed input


def test_yaml_syntax_error_has_a_line_number():
    report = run("malformed_syntax.yml")
    assert not report.ok and not report.written
    (error,) = report.errors
    assert error.line == 6 and "started on line 3" in error.message
    assert error.code == "syntax"


def test_wrong_types_are_errors_with_paths_and_lines_and_nothing_is_written():
    report = run("malformed_types.yml")
    assert not report.written
    found = {(p.path, p.line) for p in report.errors}
    assert found == {
        ("/tools/1/name", 5),
        ("/tools/2/type", 8),
        ("/tools/2/timeout_seconds", 9),
        ("/tools/2/is_active", 10),
        ("/tools/2/parameters_schema", 11),
        ("/tools/3/parameters_schema/properties/1st-place", 17),
    }
    by_path = {p.path: p.message for p in report.errors}
    assert "must be a string, got a number" in by_path["/tools/1/name"]
    assert "must be an integer" in by_path["/tools/2/timeout_seconds"]
    assert not Tool.objects.exists()  # good_one was fine, but nothing is written


def test_duplicate_keys_are_errors():
    report = run("duplicate_keys.yml")
    (error,) = report.errors
    assert (error.path, error.line) == ("/tools/0/description", 5)
    assert "first on line 4" in error.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("just a string", "unrecognized file"),
        ("tools: nope", "must be a list"),
        ('{"tools": [}', "JSON syntax error"),
        ("a: &a [1, 2]\nb: !!binary aGVsbG8=\n", "bytes values are not supported"),
    ],
)
def test_other_malformed_inputs(text, message):
    report = run(text) if text else import_content(text, actor=None)
    assert not report.ok
    assert message in report.text()


LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([prev] * 9)}]\n"
    for name, prev in zip("bcdefg", ["x", "*b", "*c", "*d", "*e", "*f"], strict=True)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # An alias inside the node it names: an infinitely deep document, refused at once
        # (it used to be walked until memory ran out).
        ("a: &a [*a, *a]\n", "an alias refers to a node that contains it"),
        ("a: &a {b: *a}\n", "an alias refers to a node that contains it"),
        ("tools: &t\n  - name: x\n    more: *t\n", "an alias refers to a node that contains it"),
        # A small file that expands to millions of nodes.
        (LAUGHS, "too large once its aliases are expanded"),
        # Long keys repeated by aliases: few nodes, but every path is long.
        (
            "a: &a\n"
            + "".join(f"  {'k' * 900}{i}: 1\n" for i in range(200))
            + f"b: &b [{', '.join(['*a'] * 200)}]\n"
            + f"c: [{', '.join(['*b'] * 200)}]\n",
            "too large once its aliases are expanded",
        ),
        ("[" * 150 + "]" * 150, "nested more than 100 levels deep"),
        ("[" * 5000 + "]" * 5000, "nested more than 100 levels deep"),
        ("[" * 3000 + "1," + "]" * 3000, "nested more than 100 levels deep"),  # JSON fallback
    ],
)
def test_documents_that_would_exhaust_the_server_are_refused(text, message):
    report = run(text)
    assert not report.ok
    assert message in report.text()


def test_api_refuses_a_recursive_alias(staff_client):
    response = staff_client.post(
        "/api/v1/tools/import", {"content": "a: &a [*a, *a]", "dry_run": True}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "an alias refers to a node that contains it" in response.json()["error"]["message"]


def test_service_errors_roll_back_the_whole_import():
    tool = tool_upsert(actor=None, name="has_secret", type="http").tool
    config_set(actor=None, tool=tool, config_key="api_key", config_value=CANARY, is_secret=True)
    text = (
        "tools:\n"
        "  - name: brand_new\n    type: http\n"
        "  - name: has_secret\n    configs:\n      api_key: plain-now\n"
    )
    report = run(text)
    assert not report.ok
    (error,) = report.errors
    assert error.path == "/tools/1" and "secret" in error.message
    assert not Tool.objects.filter(name="brand_new").exists()
    assert ToolConfig.objects.get(config_key="api_key").value == CANARY


def test_mcp_tool_needs_a_known_server():
    report = run("tools:\n  - name: gh__search\n    mcp_server: nowhere\n")
    (error,) = report.errors
    assert error.path == "/tools/0/mcp_server" and "unknown MCP server" in error.message


# --------------------------------------------------------------------------- export


def build_catalog() -> None:
    assert run("tools.yml").ok
    assert run("mcp.yml").ok
    assert run("single_tool.yml").ok
    assert run("openapi.json", **PETS).ok
    fx = Tool.objects.get(name="fx_convert")
    config_set(actor=None, tool=fx, config_key="api_key", config_value=CANARY, is_secret=True)
    parameter_create(
        actor=None, tool=fx, name="rate", parameter_type="output", type="number", description="r"
    )
    mcp_services.mcp_server_create(
        actor=None,
        name="vault",
        url="https://vault.example/mcp",
        auth_token=CANARY,
        tool_prefix="",  # listed under the upstream's own names: kept through a round trip
    )
    github = MCPServer.objects.get(name="github")
    tool_upsert(
        actor=None,
        name="github__search_repositories",
        type="mcp",
        fields={"description": "Search repositories", "requires_approval": True},
        metadata={
            mcp_services.META_SERVER: "github",
            mcp_services.META_SERVER_ID: str(github.pk),
            mcp_services.META_REMOTE_NAME: "search_repositories",
        },
        parameters=[{"name": "query", "type": "string", "required": True}],
        configs={"remote_tool_name": "search_repositories", "server_id": str(github.pk)},
    )


STATE_FIELDS = (
    "type",
    "description",
    "version",
    "is_active",
    "timeout_seconds",
    "max_retries",
    "cache_ttl_seconds",
    "max_concurrency",
    "max_response_bytes",
    "requires_approval",
)


def catalog_state() -> dict:
    """The catalog without ids and timestamps, with server ids replaced by server names."""
    server_names = {str(s.pk): s.name for s in MCPServer.objects.all()}

    def swap(value):
        return server_names.get(value, value) if isinstance(value, str) else value

    state = {}
    for tool in Tool.objects.prefetch_related("parameters", "configs"):
        state[tool.name] = {
            "fields": {f: getattr(tool, f) for f in STATE_FIELDS},
            "metadata": {k: swap(v) for k, v in tool.tool_metadata.items()},
            "params": params(tool),
            "configs": {k: swap(v) for k, v in configs(tool).items()},
            "secrets": sorted(c.config_key for c in tool.configs.all() if c.is_secret),
        }
    for server in MCPServer.objects.all():
        state[f"server:{server.name}"] = {
            k: v
            for k, v in mcp_services.mcp_server_snapshot(server).items()
            if k not in ("id", "auth_token")
        }
    return state


def test_export_never_contains_secret_values_and_reimports_unchanged():
    build_catalog()
    text = export_catalog("tools")
    assert CANARY not in text
    exported = {t["name"]: t for t in yaml.safe_load(text)["tools"]}
    assert exported["fx_convert"]["secret_configs"] == ["api_key"]  # the name, never the value
    assert exported["github__search_repositories"]["mcp_server"] == "github"
    events = AuditEvent.objects.count()
    report = run(text)
    assert report.ok, report.text()
    assert report.counts()["created"] == 0 and report.counts()["updated"] == 0, report.text()
    assert AuditEvent.objects.count() == events

    single = export_catalog("single")
    assert CANARY not in single
    report = run(single)
    assert report.ok, report.text()
    assert report.counts()["updated"] == 0, report.text()


def test_parameter_order_survives_and_reimporting_an_export_changes_nothing():
    from registry.models import ToolParameter
    from registry.services.tools import tool_create

    tool = tool_create(
        actor=None,
        name="ordered",
        type="http",
        parameters=[{"name": "zeta", "type": "string"}, {"name": "alpha", "type": "integer"}],
    )
    assert list(tool.input_schema()["properties"]) == ["zeta", "alpha"]  # the order given
    # Rows stored before positions followed the order given: all at 0.
    legacy = tool_create(
        actor=None,
        name="legacy",
        type="http",
        parameters=[{"name": "b", "type": "string"}, {"name": "a", "type": "string"}],
    )
    ToolParameter.objects.filter(tool=legacy).update(position=0)
    text = export_catalog("tools")
    events = AuditEvent.objects.count()
    report = run(text)
    assert report.ok, report.text()
    assert report.counts()["updated"] == 0, report.text()
    assert AuditEvent.objects.count() == events


def test_export_rebuilds_the_same_catalog_elsewhere():
    build_catalog()
    before = catalog_state()
    text = export_catalog("tools")
    Tool.objects.all().delete()
    MCPServer.objects.all().delete()
    report = run(text)
    assert report.ok, report.text()
    after = catalog_state()
    # The secret's value never left: the key is reported as needing a value.
    assert any("api_key has no value" in p.message for p in report.warnings)
    assert any("vault needs a bearer token" in p.message for p in report.warnings)
    # Nor did the stdio environment's values: the variable is reported, not set to the mask.
    (env_warning,) = [p for p in report.warnings if "/env/" in p.path]
    assert env_warning.path.endswith("/env/LOG_LEVEL") and "set it" in env_warning.message
    assert MCPServer.objects.get(name="local_files").stored_env() == {}
    before["fx_convert"]["secrets"] = []
    before["server:local_files"]["env"] = {}
    assert after == before
    assert MCPServer.objects.get(name="vault").tool_prefix == ""


def test_export_command_writes_a_file(tmp_path):
    build_catalog()
    target = tmp_path / "catalog.yml"
    call_command("export_tools", "-o", str(target))
    assert CANARY not in target.read_text()
    call_command("export_tools", "--format", "single", "-o", str(tmp_path / "single.yml"))
    assert (tmp_path / "single.yml").read_text().startswith("type: tool")


# --------------------------------------------------------------------------- OpenAPI


def test_openapi_import_creates_one_http_tool_per_operation():
    report = run("openapi.json", **PETS)
    assert report.ok, report.text()
    assert report.format == "openapi"
    assert sorted(report.names("created")) == [
        "pets__createPet",
        "pets__deletePet",
        "pets__get_pets_pet_id",
        "pets__listPets",
    ]
    listing = Tool.objects.get(name="pets__listPets")
    assert listing.type == "http" and listing.description == "List pets"
    assert listing.tool_metadata["category"] == "pets"
    assert configs(listing) == {
        "base_url": "https://pets.example/v1",
        "endpoint": "/pets",
        "method": "GET",
    }
    assert params(listing)["limit"]["json_schema"] == {"maximum": 100}
    assert "X-Request-Id" not in params(listing)
    assert any("header parameter 'X-Request-Id'" in p.message for p in report.warnings)

    create = Tool.objects.get(name="pets__createPet")
    assert create.description.startswith("Create a pet")  # description when no summary
    assert configs(create)["method"] == "POST"
    body = params(create)
    assert list(body) == ["name", "tag", "owner"]
    assert body["name"]["required"] is True and body["tag"]["required"] is False
    # The $ref to Owner is resolved into the fragment.
    assert body["owner"]["json_schema"] == {
        "properties": {"email": {"type": "string", "format": "email"}}
    }

    show = Tool.objects.get(name="pets__get_pets_pet_id")  # no operationId: method_path
    assert configs(show)["endpoint"] == "/pets/{pet_id}"  # placeholder renamed for the executor
    assert params(show)["pet_id"]["required"] is True


def test_openapi_reimport_updates_and_deactivates():
    assert run("openapi.json", **PETS).ok
    events = AuditEvent.objects.count()
    same = run("openapi.json", **PETS)
    assert same.counts() == {"created": 0, "updated": 0, "unchanged": 4, "deactivated": 0}
    assert AuditEvent.objects.count() == events

    v2 = run("openapi_v2.yaml", **PETS)
    assert v2.ok, v2.text()
    assert v2.names("updated") == ["pets__listPets"]
    assert v2.names("deactivated") == ["pets__deletePet"]
    assert sorted(v2.names("unchanged")) == ["pets__createPet", "pets__get_pets_pet_id"]
    listing = Tool.objects.get(name="pets__listPets")
    assert list(params(listing)) == ["limit", "cursor"]
    assert listing.description == "List the pets, paginated"
    assert Tool.objects.get(name="pets__deletePet").is_active is False

    back = run("openapi.json", **PETS)
    assert "pets__deletePet" in back.names("updated")
    assert Tool.objects.get(name="pets__deletePet").is_active is True


def test_openapi_import_selects_operations_by_tag_operation_id_or_method_and_path():
    report = run("openapi.json", tags=["pets"], operations=["DELETE /pets/{pet-id}"], **PETS)
    assert report.ok, report.text()
    assert sorted(report.names("created")) == ["pets__deletePet", "pets__listPets"]
    assert Tool.objects.filter(name__startswith="pets__").count() == 2
    assert any(p.code == "not_selected" and "2 operation(s)" in p.message for p in report.warnings)

    # The whole document later: the rest is created, nothing is deactivated.
    assert sorted(run("openapi.json", **PETS).names("created")) == [
        "pets__createPet",
        "pets__get_pets_pet_id",
    ]
    # A narrower selection leaves the tools it does not select as they are.
    narrow = run("openapi.json", operations=["createPet"], **PETS)
    assert narrow.ok and narrow.names("deactivated") == []
    assert Tool.objects.filter(name__startswith="pets__", is_active=True).count() == 4
    # ... while an operation that left the document is still deactivated.
    v2 = run("openapi_v2.yaml", operations=["listPets"], **PETS)
    assert v2.names("deactivated") == ["pets__deletePet"], v2.text()


def test_openapi_selectors_that_match_nothing_are_errors_and_nothing_is_written():
    report = run("openapi.json", tags=["pets", "cats"], operations=["listPets", "nope"], **PETS)
    assert not report.ok
    messages = [p.message for p in report.errors]
    assert messages == [
        "no operation in the document matches the selected tag 'cats'",
        "no operation in the document matches the selected operation 'nope'",
    ]
    assert not Tool.objects.exists()
    # Selecting only makes sense for OpenAPI documents.
    report = run("tools.yml", tags=["pets"])
    assert not report.ok and "OpenAPI" in report.errors[0].message
    assert not Tool.objects.exists()


def test_max_tools_refuses_before_anything_is_written():
    report = run("openapi.json", max_tools=3, **PETS)
    assert not report.ok
    assert report.errors[0].code == "too_many_tools"
    assert "would import 4 tools" in report.errors[0].message
    assert "at most 3" in report.errors[0].message
    assert not Tool.objects.exists()
    assert run("openapi.json", max_tools=3, tags=["pets"], **PETS).ok  # a selection fits
    assert not run("tools.yml", max_tools=1).ok  # catalogs too
    assert run("tools.yml", max_tools=2).ok


def test_openapi_names_stay_unique():
    tool_upsert(actor=None, name="pets__listPets", type="python")  # someone else's tool
    report = run("openapi.json", **PETS)
    assert report.ok, report.text()
    assert "pets__listPets_2" in report.names("created")
    assert Tool.objects.get(name="pets__listPets").type == "python"


def test_openapi_needs_base_url_and_namespace_and_version_3():
    report = run("openapi.json")
    assert not report.ok and "base_url" in report.text()
    report = run("openapi.json", base_url="ftp://x", namespace="bad name")
    assert "base_url" in report.text() and "namespace" in report.text()
    report = run('swagger: "2.0"\npaths: {}\n', fmt="openapi", **PETS)
    assert "Swagger 2.0 is not supported" in report.text()
    report = run("tools: []\n", fmt="openapi", **PETS)
    assert "not an OpenAPI document" in report.text()


def test_openapi_bad_refs_are_errors_with_paths():
    spec = {
        "openapi": "3.1.0",
        "paths": {
            "/a": {"get": {"operationId": "a", "parameters": [{"$ref": "#/components/nope"}]}}
        },
    }
    report = run(json.dumps(spec, indent=2), **PETS)
    assert not report.ok
    assert "points nowhere" in report.text() and "/paths/~1a/get/parameters/0" in report.text()


def test_import_openapi_command(capsys):
    call_command(
        "import_openapi",
        str(DATA / "openapi.json"),
        "--base-url",
        PETS["base_url"],
        "--namespace",
        "pets",
        "--dry-run",
    )
    assert "Dry run" in capsys.readouterr().out
    assert not Tool.objects.exists()
    call_command(
        "import_openapi",
        str(DATA / "openapi.json"),
        "--base-url",
        PETS["base_url"],
        "--namespace",
        "pets",
    )
    assert Tool.objects.filter(name__startswith="pets__").count() == 4
    call_command(
        "import_openapi",
        str(DATA / "openapi.json"),
        "--base-url",
        PETS["base_url"],
        "--namespace",
        "few",
        "--tag",
        "pets",
        "--operation",
        "createPet",
    )
    assert sorted(Tool.objects.filter(name__startswith="few__").values_list("name", flat=True)) == [
        "few__createPet",
        "few__listPets",
    ]
    with pytest.raises(CommandError):
        call_command(
            "import_openapi",
            str(DATA / "openapi.json"),
            "--base-url",
            "nope",
            "--namespace",
            "pets",
        )


def test_import_tools_command(capsys):
    call_command("import_tools", str(DATA / "tools.yml"), "--dry-run")
    out = capsys.readouterr().out
    assert "Created (2)" in out and "Dry run" in out
    assert not Tool.objects.exists()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_tools", str(DATA / "malformed_types.yml"))
    assert "line 9, /tools/2/timeout_seconds" in capsys.readouterr().out
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_tools", str(DATA / "missing.yml"))


# --------------------------------------------------------------------------- API and admin


def test_api_import_is_for_platform_admins(plain_client, reviewer_client):
    body = {"content": read("tools.yml")}
    for client in (plain_client, reviewer_client):
        response = client.post("/api/v1/tools/import", body, format="json")
        assert response.status_code == 403
    assert not Tool.objects.exists()


def test_api_import(staff_client):
    url = "/api/v1/tools/import"
    response = staff_client.post(
        url, {"content": read("tools.yml"), "dry_run": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["counts"]["created"] == 2 and response.json()["written"] is False
    assert not Tool.objects.exists()

    response = staff_client.post(url, {"content": read("tools.yml")}, format="json")
    assert response.json()["written"] is True
    assert response.json()["unknown_keys"][0] == {
        "path": "/tools/1/owner",
        "line": 28,
        "message": "unknown key 'owner' (ignored)",
        "code": "unknown_key",
    }
    created = AuditEvent.objects.filter(action="tool.created").values_list("actor_name", flat=True)
    assert set(created) == {"alice-staff"}

    bad = staff_client.post(url, {"content": read("malformed_syntax.yml")}, format="json")
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error["code"] == "import_invalid" and "line 6" in error["message"]
    assert error["details"]["errors"][0]["line"] == 6

    spec = {"format": "openapi", "content": read("openapi.json"), **PETS}
    response = staff_client.post(url, spec, format="json")
    assert response.status_code == 200 and response.json()["counts"]["created"] == 4
    response = staff_client.post(url, {"content": read("openapi.json")}, format="json")
    assert response.status_code == 400  # no base_url / namespace
    response = staff_client.post(url, {"content": "x", "colour": 1}, format="json")
    assert (
        response.status_code == 400 and response.json()["error"]["details"][0]["field"] == "colour"
    )


def test_api_import_selects_operations_and_is_bounded(staff_client, settings):
    url = "/api/v1/tools/import"
    spec = {"content": read("openapi.json"), **PETS}
    settings.TOOLHUB_IMPORT_MAX_TOOLS = 3
    response = staff_client.post(url, spec, format="json")
    assert response.status_code == 400
    errors = response.json()["error"]["details"]["errors"]
    assert errors[0]["code"] == "too_many_tools" and "import_openapi" in errors[0]["message"]
    assert not Tool.objects.exists()

    response = staff_client.post(
        url, {**spec, "tags": ["pets"], "operations": ["createPet"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["counts"]["created"] == 2
    response = staff_client.post(url, {**spec, "tags": "pets"}, format="json")
    assert response.status_code == 400  # a list, not a string
    assert response.json()["error"]["details"][0]["field"] == "tags"


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def test_admin_import_page(admin_client, reviewer_user):
    url = reverse("admin:registry_tool_import")
    changelist = admin_client.get(reverse("admin:registry_tool_changelist")).content.decode()
    assert url in changelist
    assert admin_client.get(url).status_code == 200

    with open(DATA / "tools.yml", "rb") as upload:
        page = admin_client.post(url, {"file": upload, "format": "auto", "dry_run": "on"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Created (2)" in html and "dry run" in html.lower()
    assert not Tool.objects.exists()

    with open(DATA / "tools.yml", "rb") as upload:
        page = admin_client.post(url, {"file": upload, "format": "auto"})
    assert Tool.objects.count() == 2

    with open(DATA / "openapi.json", "rb") as upload:
        page = admin_client.post(url, {"file": upload, "format": "openapi", **PETS})
    assert "pets__listPets" in page.content.decode()

    with open(DATA / "malformed_syntax.yml", "rb") as upload:
        page = admin_client.post(url, {"file": upload, "format": "auto"})
    assert "line 6" in page.content.decode()

    with open(DATA / "openapi.json", "rb") as upload:
        page = admin_client.post(
            url,
            {
                "file": upload,
                "format": "openapi",
                **PETS,
                "namespace": "few",
                "tags": "pets",
                "operations": " createPet , DELETE /pets/{pet-id}",
            },
        )
    assert set(Tool.objects.filter(name__startswith="few__").values_list("name", flat=True)) == {
        "few__listPets",
        "few__createPet",
        "few__deletePet",
    }

    reviewer = Client()
    reviewer.force_login(reviewer_user)
    assert reviewer.get(url).status_code == 403


def test_other_tool_fields_are_passed_to_the_services_which_validate_them():
    from registry.importers.catalog_files import extra_tool_fields

    if "approval_ttl_seconds" not in extra_tool_fields():
        pytest.skip("no approval_ttl_seconds field in this version of the tool model")
    text = "tools:\n  - name: slow_ok\n    type: http\n    approval_ttl_seconds: 5\n"
    report = run(text)
    (error,) = report.errors
    assert (error.path, error.line) == ("/tools/0/approval_ttl_seconds", 4)
    assert not report.unknown_keys
    assert run(text.replace(": 5", ": 600")).ok
    assert Tool.objects.get(name="slow_ok").approval_ttl_seconds == 600
    assert "approval_ttl_seconds: 600" in export_catalog()


# --------------------------------------------------------------------------- configs per executor


def test_import_refuses_configs_the_executor_cannot_use_and_names_where():
    text = (
        "tools:\n"
        "  - name: fine_tool\n    type: http\n    configs:\n      base_url: https://a.example\n"
        "  - name: trace_tool\n"
        "    type: http\n"
        "    configs:\n"
        "      base_url: https://a.example\n"
        "      method: TRACE\n"
    )
    report = run(text)
    assert not report.ok
    (error,) = report.errors
    assert (error.path, error.line) == ("/tools/1/configs/method", 10)
    assert "Config 'method' must be one of GET" in error.message and "TRACE" in error.message
    assert error.code == "validation_error"
    assert not Tool.objects.filter(name__in=["fine_tool", "trace_tool"]).exists()
    assert run(text.replace("TRACE", "post")).ok
    assert configs(Tool.objects.get(name="trace_tool"))["method"] == "post"


@pytest.mark.parametrize(
    ("entry", "path"),
    [
        ("    configs:\n      headers: not an object\n", "/tools/0/configs/headers"),
        ("    configs:\n      query_params: [1]\n", "/tools/0/configs/query_params"),
        ("    configs:\n      timeout_seconds: -3\n", "/tools/0/configs/timeout_seconds"),
        ("    configs:\n      auth_type: kerberos\n", "/tools/0/configs/auth_type"),
        (
            "    configs:\n      headers_input_map: {token: {head: X-Token}}\n",
            "/tools/0/configs/headers_input_map",
        ),
    ],
)
def test_each_refused_config_points_at_its_key(entry, path):
    report = run("tools:\n  - name: odd_tool\n    type: http\n" + entry)
    (error,) = report.errors
    assert error.path == path and error.line == 5
    assert f"Config '{path.rsplit('/', 1)[1]}' must be" in error.message


def test_import_never_echoes_a_refused_secret_config():
    text = (
        "tools:\n"
        "  - name: secret_tool\n"
        "    type: http\n"
        "    secret_configs:\n"
        f'      bearer_token: "{CANARY}\\r\\nX-Injected: 1"\n'
    )
    report = run(text)
    (error,) = report.errors
    assert (error.path, error.line) == ("/tools/0/secret_configs/bearer_token", 5)
    assert "Config 'bearer_token' must be" in error.message
    assert CANARY not in report.text() and CANARY not in json.dumps(report.as_dict())
    assert not Tool.objects.filter(name="secret_tool").exists()


def test_import_changing_the_type_checks_the_configs_it_ends_with():
    tool = tool_upsert(actor=None, name="shape_shifter", type="python").tool
    config_set(actor=None, tool=tool, config_key="method", config_value="TRACE")
    text = "tools:\n  - name: shape_shifter\n    type: http\n"
    report = run(text)
    (error,) = report.errors
    assert error.path == "/tools/0/type" and "Config 'method'" in error.message
    assert Tool.objects.get(name="shape_shifter").type == "python"
    # The same document fixing the config: the type changes.
    report = run(text + "    configs:\n      method: GET\n")
    assert report.ok, report.text()
    assert Tool.objects.get(name="shape_shifter").type == "http"
