"""Parameters and configs endpoints, including secrets handling and audit rows."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection

from registry.models import AuditEvent, ToolConfig
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def tool(db):
    return ToolFactory(name="weather")


def params_url(tool):
    return f"/api/v1/tools/{tool.pk}/parameters"


def configs_url(tool, key=""):
    return f"/api/v1/tools/{tool.pk}/configs" + (f"/{key}" if key else "")


class TestParameters:
    def test_parameters_added_one_by_one_keep_that_order(self, staff_client, tool):
        for name in ("q", "n", "after"):
            response = staff_client.post(params_url(tool), {"name": name}, format="json")
            assert response.status_code == 201, response.json()
        listed = [p["name"] for p in staff_client.get(params_url(tool)).json()]
        assert listed == ["q", "n", "after"]
        schema = staff_client.get(f"/api/v1/tools/{tool.pk}/schema").json()
        properties = schema.get("input_schema", schema).get("properties", schema)
        assert list(properties)[:3] == ["q", "n", "after"]

    def test_create_list_filter(self, staff_client, tool):
        for spec in (
            {"name": "city", "required": True},
            {
                "name": "units",
                "type": "string",
                "json_schema": {"enum": ["c", "f"]},
                "default": "c",
            },
            {"name": "temp", "type": "number", "parameter_type": "output"},
        ):
            response = staff_client.post(params_url(tool), spec, format="json")
            assert response.status_code == 201, response.json()
        everything = staff_client.get(params_url(tool)).json()
        assert [p["name"] for p in everything] == ["city", "units", "temp"]
        inputs = staff_client.get(params_url(tool) + "?parameter_type=input").json()
        assert [p["name"] for p in inputs] == ["city", "units"]
        outputs = staff_client.get(params_url(tool) + "?parameter_type=output").json()
        assert [p["name"] for p in outputs] == ["temp"]
        bad = staff_client.get(params_url(tool) + "?parameter_type=both")
        assert bad.status_code == 400
        assert AuditEvent.objects.filter(action="tool_parameter.created").count() == 3

    @pytest.mark.parametrize(
        ("spec", "field", "status"),
        [
            ({"name": "9lives"}, "name", 400),
            ({"name": "a", "type": "date"}, "type", 400),
            ({"name": "a", "parameter_type": "inout"}, "parameter_type", 400),
            ({"name": "a", "json_schema": {"minimum": "three"}}, "json_schema", 400),
            ({"name": "a", "json_schema": [1]}, "json_schema", 400),
            ({"name": "a", "type": "integer", "default": "ten"}, "default", 400),
            ({"name": "a", "json_schema": {"enum": ["x"]}, "default": "y"}, "default", 400),
            ({"name": "a", "colour": "red"}, "colour", 400),
        ],
    )
    def test_bad_parameter(self, staff_client, tool, spec, field, status):
        response = staff_client.post(params_url(tool), spec, format="json")
        assert response.status_code == status, response.json()
        assert field in [d["field"] for d in response.json()["error"]["details"]]

    def test_duplicate_name_conflicts_but_input_and_output_may_share(self, staff_client, tool):
        assert staff_client.post(params_url(tool), {"name": "x"}, format="json").status_code == 201
        dup = staff_client.post(params_url(tool), {"name": "x"}, format="json")
        assert dup.status_code == 409
        out = staff_client.post(
            params_url(tool), {"name": "x", "parameter_type": "output"}, format="json"
        )
        assert out.status_code == 201

    def test_update_and_delete(self, staff_client, tool):
        pid = staff_client.post(
            params_url(tool), {"name": "days", "type": "integer"}, format="json"
        ).json()["id"]
        url = f"/api/v1/tools/parameters/{pid}"
        response = staff_client.patch(url, {"required": True, "default": 3}, format="json")
        assert response.status_code == 200, response.json()
        assert response.json()["default"] == 3 and response.json()["has_default"] is True
        event = AuditEvent.objects.get(action="tool_parameter.updated")
        assert event.before["required"] is False and event.after["required"] is True
        response = staff_client.put(url, {"name": "days", "type": "integer"}, format="json")
        assert response.status_code == 200
        assert response.json()["has_default"] is False and response.json()["required"] is False
        assert staff_client.delete(url).status_code == 204
        assert staff_client.delete(url).status_code == 404
        assert AuditEvent.objects.filter(action="tool_parameter.deleted").count() == 1

    def test_update_to_invalid_default_is_refused(self, staff_client, tool):
        pid = staff_client.post(
            params_url(tool), {"name": "days", "type": "integer"}, format="json"
        ).json()["id"]
        response = staff_client.patch(
            f"/api/v1/tools/parameters/{pid}", {"default": "many"}, format="json"
        )
        assert response.status_code == 400

    def test_unknown_parameter_and_tool(self, staff_client):
        assert staff_client.get(f"/api/v1/tools/parameters/{uuid.uuid4()}").status_code == 404
        assert staff_client.get(f"/api/v1/tools/{uuid.uuid4()}/parameters").status_code == 404

    def test_plain_user_reads_but_cannot_write(self, plain_client, tool):
        assert plain_client.get(params_url(tool)).status_code == 200
        assert plain_client.post(params_url(tool), {"name": "x"}, format="json").status_code == 403


class TestConfigs:
    def test_create_then_post_same_key_updates(self, staff_client, tool):
        first = staff_client.post(
            configs_url(tool),
            {"config_key": "base_url", "config_value": "https://a"},
            format="json",
        )
        assert first.status_code == 201
        second = staff_client.post(
            configs_url(tool),
            {"config_key": "base_url", "config_value": "https://b"},
            format="json",
        )
        assert second.status_code == 200
        assert second.json()["config_value"] == "https://b"
        assert ToolConfig.objects.filter(tool=tool).count() == 1
        event = AuditEvent.objects.get(action="tool_config.updated")
        assert (event.before["config_value"], event.after["config_value"]) == (
            "https://a",
            "https://b",
        )

    def test_json_values_round_trip(self, staff_client, tool):
        value = {"X-Env": "prod", "nested": [1, 2, {"a": None}]}
        staff_client.post(
            configs_url(tool), {"config_key": "headers", "config_value": value}, format="json"
        )
        assert staff_client.get(configs_url(tool, "headers")).json()["config_value"] == value

    def test_secret_is_write_only_masked_and_encrypted_at_rest(self, staff_client, tool):
        canary = "canary-" + uuid.uuid4().hex
        response = staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": canary, "is_secret": True},
            format="json",
        )
        assert response.status_code == 201
        assert canary not in response.content.decode()
        for url in (configs_url(tool), configs_url(tool, "api_key"), f"/api/v1/tools/{tool.pk}"):
            assert canary not in staff_client.get(url).content.decode()
        with connection.cursor() as cursor:
            cursor.execute("SELECT plain_value, encrypted_value FROM registry_toolconfig")
            raw = json.dumps(cursor.fetchall(), default=str)
        assert canary not in raw
        assert ToolConfig.objects.get(config_key="api_key").value == canary
        audit = json.dumps(list(AuditEvent.objects.values("before", "after")))
        assert canary not in audit and "********" in audit

    def test_updating_a_secret_without_flag_keeps_it_secret(self, staff_client, tool):
        staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": "one-secret", "is_secret": True},
            format="json",
        )
        response = staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": "two-secret"},
            format="json",
        )
        assert response.json()["is_secret"] is True
        assert response.json()["config_value"] == "********"
        assert ToolConfig.objects.get(config_key="api_key").value == "two-secret"

    def test_a_secret_cannot_be_turned_plain(self, staff_client, tool):
        staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": "one-secret", "is_secret": True},
            format="json",
        )
        response = staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": "two-secret", "is_secret": False},
            format="json",
        )
        assert response.status_code == 400
        assert response.json()["error"]["details"][0]["field"] == "is_secret"
        assert "delete it and add it again" in response.json()["error"]["message"]
        assert "two-secret" not in response.content.decode()
        config = ToolConfig.objects.get(config_key="api_key")
        assert config.is_secret and config.value == "one-secret"

    @pytest.mark.parametrize(
        ("payload", "field"),
        [
            ({"config_value": "x"}, "config_key"),
            ({"config_key": "has space", "config_value": "x"}, "config_key"),
            ({"config_key": "k"}, "config_value"),
            ({"config_key": "k", "config_value": "v", "extra": 1}, "extra"),
        ],
    )
    def test_bad_config(self, staff_client, tool, payload, field):
        response = staff_client.post(configs_url(tool), payload, format="json")
        assert response.status_code == 400
        assert field in [d["field"] for d in response.json()["error"]["details"]]

    def test_get_and_delete_by_key(self, staff_client, tool):
        staff_client.post(configs_url(tool), {"config_key": "k", "config_value": 1}, format="json")
        assert staff_client.get(configs_url(tool, "k")).json()["config_value"] == 1
        assert staff_client.get(configs_url(tool, "missing")).status_code == 404
        assert staff_client.delete(configs_url(tool, "k")).status_code == 204
        assert staff_client.delete(configs_url(tool, "k")).status_code == 404
        assert AuditEvent.objects.filter(action="tool_config.deleted").count() == 1

    def test_plain_user_cannot_write_configs(self, plain_client, tool):
        response = plain_client.post(
            configs_url(tool), {"config_key": "k", "config_value": 1}, format="json"
        )
        assert response.status_code == 403


# --------------------------------------------------------------------------- configs per executor

# (key, a value the HTTP executor cannot use, what the error says, a value it can use)
HTTP_CASES = [
    ("method", "TRACE", "one of GET, HEAD, OPTIONS, DELETE, POST, PUT or PATCH", "post"),
    (
        "auth_type",
        "kerberos",
        "one of none, bearer_token, api_key, basic_auth or caller_account",
        "api_key",
    ),
    ("headers", "not an object", "JSON object", {"X-Env": "prod", "X-Count": 3, "X-Off": None}),
    ("headers", {"Bad Header": "x"}, "not a valid header name", '{"Accept": "text/csv"}'),
    ("headers", {"X-A": "line\r\nbreak"}, "line break", {"X-A": "one line"}),
    ("query_params", [1], "JSON object", {"units": "metric", "ids": [1, 2]}),
    ("timeout_seconds", -3, "positive number", 2.5),
    ("timeout_seconds", "soon", "positive number", "30"),
    ("headers_input_map", ["token"], "JSON object", {"token": "X-Token"}),
    ("headers_input_map", {"token": 5}, "input 'token'", {"token": "Authorization"}),
    ("headers_input_map", {"token": "Bad Header"}, "not a valid header name", {"t": "X-T"}),
    (
        "headers_input_map",
        {"token": {"head": "Authorization"}},
        "unknown key(s) 'head'",
        {"token": {"header": "Authorization", "template": "Bearer {value}"}},
    ),
    (
        "headers_input_map",
        {"token": {"template": "Bearer {value}"}},
        "not a valid header name",
        {"token": {"header": "X-Token"}},
    ),
    ("base_url", "ftp://files.example/", "absolute http(s) URL", "https://{region}.api.example"),
    ("base_url", "api.example/v1", "absolute http(s) URL", "http://10.0.0.5:8080/v1"),
    ("endpoint", 42, "a path appended to base_url", "/users/{user_id}"),
    ("api_key_header", "Bad:Name", "header name", "X-Api-Key"),
]


class TestConfigsCheckedForTheExecutor:
    @pytest.mark.parametrize(
        "header", ["Authorization", "X-API-Key", "Cookie", "X-Auth-Token", "x-client-secret"]
    )
    def test_credentials_in_plain_headers_are_refused(self, staff_client, tool, header):
        """Plain configs are shown to every reader of the tool and written into the audit log."""
        value = {header: "Bearer PLAIN-HDR-TOKEN-1", "Accept": "application/json"}
        response = staff_client.post(
            configs_url(tool), {"config_key": "headers", "config_value": value}, format="json"
        )
        assert response.status_code == 400, response.json()
        assert header in response.json()["error"]["message"]
        assert "secret" in response.json()["error"]["message"]
        secret = staff_client.post(
            configs_url(tool),
            {"config_key": "headers", "config_value": value, "is_secret": True},
            format="json",
        )
        assert secret.status_code == 201, secret.json()
        plain = staff_client.post(
            configs_url(tool),
            {"config_key": "headers", "config_value": {"Accept": "text/plain"}, "is_secret": False},
            format="json",
        )
        assert plain.status_code == 400  # a secret never turns plain; the point stands

    @pytest.mark.parametrize(("key", "bad", "expected", "good"), HTTP_CASES)
    def test_http_config_is_checked_for_the_executor_at_save(
        self, staff_client, tool, key, bad, expected, good
    ):
        response = staff_client.post(
            configs_url(tool), {"config_key": key, "config_value": bad}, format="json"
        )
        assert response.status_code == 400, response.json()
        error = response.json()["error"]
        assert error["code"] == "validation_error"
        (detail,) = error["details"]
        assert detail["field"] == "config_value"
        assert detail["code"] == "invalid_config"
        assert f"Config '{key}' must be" in detail["message"]
        assert expected in detail["message"]
        assert f"Config '{key}'" in error["message"]
        assert not ToolConfig.objects.filter(tool=tool).exists()
        assert not AuditEvent.objects.filter(action__startswith="tool_config").exists()

        accepted = staff_client.post(
            configs_url(tool), {"config_key": key, "config_value": good}, format="json"
        )
        assert accepted.status_code == 201, accepted.json()
        assert ToolConfig.objects.get(tool=tool, config_key=key).value == good

    @pytest.mark.parametrize(
        ("key", "bad", "expected"),
        # At run time the egress guard refuses other schemes, with its own error.
        [case[:3] for case in HTTP_CASES if not str(case[1]).startswith("ftp:")],
    )
    def test_the_executor_refuses_the_same_values_in_the_same_words(self, key, bad, expected):
        from executions.executors.base import ErrorType, ToolCall
        from executions.executors.http import HTTPExecutor
        from registry.services.tools import config_problem

        configs = {"base_url": "https://api.example", key: bad}
        if key == "api_key_header":
            configs.update(auth_type="api_key", api_key="k-123")
        inputs = {"token": "t-1"} if key == "headers_input_map" else {}
        result = HTTPExecutor().execute(
            ToolCall(
                tool_name="t", tool_type="http", configs=configs, inputs=inputs, timeout_seconds=1
            )
        )
        assert result.error_type == ErrorType.CONFIG
        at_save = config_problem("http", key, bad)
        assert expected in at_save
        # "Config 'k' must be …; detail." at save is "config 'k' must be …; detail" at run time.
        assert result.error_message == "c" + at_save[1:-1]

    def test_known_keys_are_checked_unknown_and_unset_ones_are_not(self, staff_client, tool):
        refused = staff_client.post(
            configs_url(tool), {"config_key": "method", "config_value": "TRACE"}, format="json"
        )
        assert refused.status_code == 400
        for key, value in [
            ("verb", "TRACE"),  # no executor reads it: a template or a note may
            ("some_template_value", [1, "any", {"json": True}]),
            ("method", None),  # unset: the executor's default (GET)
            ("timeout_seconds", ""),
        ]:
            response = staff_client.post(
                configs_url(tool), {"config_key": key, "config_value": value}, format="json"
            )
            assert response.status_code == 201, (key, response.json())

    @pytest.mark.parametrize(
        ("tool_type", "key", "bad", "expected", "good"),
        [
            ("database", "read_only", "maybe", "true or false", "off"),
            ("database", "max_rows", 0, "positive whole number", "50"),
            (
                "database",
                "query_template",
                "SELECT 1; DELETE FROM t",
                "single SQL statement",
                "SELECT * FROM t WHERE id = :id",
            ),
            (
                "database",
                "connection_string",
                "mysql://u@db.example/x",
                "postgresql://",
                "postgresql://reader@db.example:5432/sales",
            ),
            ("mcp", "server_id", "not-a-uuid", "UUID", "6f1c8a2e-0000-4000-8000-000000000001"),
            (
                "mcp",
                "server",
                {"transport": "carrier-pigeon"},
                "unknown MCP transport",
                {"transport": "streamable_http", "url": "https://mcp.example/mcp"},
            ),
            ("mcp", "remote_tool_name", ["search"], "the tool's name", "search"),
            ("python", "function", "os.system", "registered", "get_weather"),
            ("python", "module", "../tools", "module path", "acme.weather"),
        ],
    )
    def test_other_executors_check_their_keys(
        self, staff_client, tool_type, key, bad, expected, good
    ):
        other = ToolFactory(name=f"{tool_type}_tool", type=tool_type)
        response = staff_client.post(
            configs_url(other), {"config_key": key, "config_value": bad}, format="json"
        )
        assert response.status_code == 400, response.json()
        (detail,) = response.json()["error"]["details"]
        assert f"Config '{key}' must be" in detail["message"] and expected in detail["message"]
        assert not other.configs.exists()
        accepted = staff_client.post(
            configs_url(other), {"config_key": key, "config_value": good}, format="json"
        )
        assert accepted.status_code == 201, accepted.json()
        # A key only another executor knows is no concern of this one.
        other_key = "method" if tool_type != "http" else "function"
        unknown = staff_client.post(
            configs_url(other), {"config_key": other_key, "config_value": "TRACE"}, format="json"
        )
        assert unknown.status_code == 201, unknown.json()

    def test_a_refused_secret_is_never_echoed(self, staff_client, tool):
        canary = "canary-" + uuid.uuid4().hex
        response = staff_client.post(
            configs_url(tool),
            {
                "config_key": "bearer_token",
                "config_value": f"{canary}\r\nX-Evil: 1",
                "is_secret": True,
            },
            format="json",
        )
        assert response.status_code == 400, response.json()
        body = response.content.decode()
        assert canary not in body
        assert "Config 'bearer_token' must be" in body and "secret and not shown" in body
        assert not ToolConfig.objects.filter(tool=tool).exists()
        headers = staff_client.post(
            configs_url(tool),
            {"config_key": "headers", "config_value": {f"{canary} name": "x"}, "is_secret": True},
            format="json",
        )
        assert headers.status_code == 400 and canary not in headers.content.decode()

    def test_a_stored_secret_keeps_its_secrecy_when_checked(self, staff_client, tool):
        canary = "canary-" + uuid.uuid4().hex
        staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": canary, "is_secret": True},
            format="json",
        )
        # Updated without is_secret: still a secret, so its refused value is not quoted.
        response = staff_client.post(
            configs_url(tool),
            {"config_key": "api_key", "config_value": f"{canary}-naïve"},
            format="json",
        )
        assert response.status_code == 400
        assert canary not in response.content.decode()
        assert ToolConfig.objects.get(tool=tool, config_key="api_key").value == canary

    def test_tool_create_names_the_config_and_rolls_back(self, staff_client):
        response = staff_client.post(
            "/api/v1/tools",
            {
                "name": "bad_method",
                "type": "http",
                "configs": [
                    {"config_key": "base_url", "config_value": "https://api.example"},
                    {"config_key": "method", "config_value": "TRACE"},
                ],
            },
            format="json",
        )
        assert response.status_code == 400, response.json()
        (detail,) = response.json()["error"]["details"]
        assert detail["field"] == "configs[1].config_value"
        assert "Config 'method'" in detail["message"]
        assert not ToolConfig.objects.exists()
        assert not AuditEvent.objects.filter(action="tool.created").exists()

    def test_changing_the_type_checks_the_stored_configs(self, staff_client):
        other = ToolFactory(name="was_python", type="python")
        staff_client.post(
            configs_url(other), {"config_key": "method", "config_value": "TRACE"}, format="json"
        )
        response = staff_client.patch(f"/api/v1/tools/{other.pk}", {"type": "http"}, format="json")
        assert response.status_code == 400, response.json()
        (detail,) = response.json()["error"]["details"]
        assert detail["field"] == "type" and "Config 'method'" in detail["message"]
        other.refresh_from_db()
        assert other.type == "python"
        staff_client.post(
            configs_url(other), {"config_key": "method", "config_value": "PUT"}, format="json"
        )
        ok = staff_client.patch(f"/api/v1/tools/{other.pk}", {"type": "http"}, format="json")
        assert ok.status_code == 200, ok.json()


# --------------------------------------------------------------------------- the admin


@pytest.fixture
def admin_client(superuser):
    from django.test import Client

    client = Client()
    client.force_login(superuser)
    return client


def _admin_change(admin_client, tool, **overrides):
    from django.urls import reverse

    from tests.registry.test_admin import change_form_data

    data = change_form_data(tool, **overrides)
    return admin_client.post(reverse("admin:registry_tool_change", args=[tool.pk]), data)


NEW_CONFIG = {"configs-TOTAL_FORMS": 1, "configs-INITIAL_FORMS": 0}


def test_admin_shows_a_config_the_executor_cannot_use_on_the_form(admin_client, tool):
    response = _admin_change(
        admin_client,
        tool,
        **NEW_CONFIG,
        **{"configs-0-config_key": "method", "configs-0-value": "TRACE", "configs-0-tool": tool.pk},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Config &#x27;method&#x27; must be one of GET" in html
    assert "errorlist" in html
    assert not ToolConfig.objects.filter(tool=tool).exists()


def test_admin_never_echoes_a_refused_secret(admin_client, tool):
    canary = "canary-" + uuid.uuid4().hex
    response = _admin_change(
        admin_client,
        tool,
        **NEW_CONFIG,
        **{
            "configs-0-config_key": "api_key",
            "configs-0-value": f"{canary}-naïve",
            "configs-0-is_secret": "on",
            "configs-0-tool": tool.pk,
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Config &#x27;api_key&#x27; must be" in html and "secret and not shown" in html
    assert canary not in html
    assert not ToolConfig.objects.filter(tool=tool).exists()


def test_admin_checks_configs_against_the_type_chosen_on_the_same_page(admin_client):
    from registry.services.tools import config_set, tool_create

    tool = tool_create(actor=None, name="becomes_http", type="database")
    config_set(actor=None, tool=tool, config_key="method", config_value="TRACE")
    # Changing the type alone: the stored config does not suit it, and its row says so.
    refused = _admin_change(admin_client, tool, type="http")
    assert refused.status_code == 200
    assert "Config &#x27;method&#x27; must be one of GET" in refused.content.decode()
    tool.refresh_from_db()
    assert tool.type == "database"
    # Fixing the config on the same page makes the change of type go through.
    fixed = _admin_change(admin_client, tool, type="http", **{"configs-0-value": "GET"})
    assert fixed.status_code == 302
    tool.refresh_from_db()
    assert tool.type == "http" and tool.configs.get().value == "GET"
    # And a config typed for the new type is checked against it, not the old one.
    again = _admin_change(
        admin_client,
        tool,
        type="database",
        **{"configs-0-config_key": "max_rows", "configs-0-value": "0"},
    )
    assert again.status_code == 200
    assert "Config &#x27;max_rows&#x27; must be" in again.content.decode()
