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
