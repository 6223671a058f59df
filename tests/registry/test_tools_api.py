"""The tools API: every endpoint, every 4xx path, and the audit row of each write."""

from __future__ import annotations

import json
import uuid

import pytest

from registry.models import AuditEvent, Tool
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

TOOLS = "/api/v1/tools"


def error(response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "details"} <= set(body["error"])
    return body["error"]


def create(client, **overrides):
    payload = {"name": "lookup", "type": "http", "description": "Looks things up"}
    payload.update(overrides)
    return client.post(TOOLS, payload, format="json")


class TestCreate:
    def test_creates_with_parameters_and_configs_and_audits(self, staff_client, staff_user):
        response = create(
            staff_client,
            tool_metadata={"category": "search", "speed": "fast"},
            parameters=[
                {"name": "q", "type": "string", "required": True, "description": "Query"},
                {"name": "limit", "type": "integer", "default": 10, "json_schema": {"minimum": 1}},
                {"name": "hits", "type": "array", "parameter_type": "output"},
            ],
            configs=[
                {"config_key": "base_url", "config_value": "https://search.example"},
                {"config_key": "api_key", "config_value": "canary-create-123", "is_secret": True},
            ],
        )
        assert response.status_code == 201, response.json()
        body = response.json()
        assert body["name"] == "lookup" and body["type"] == "http" and body["is_active"] is True
        assert body["category"] == "search"
        assert uuid.UUID(body["id"])
        assert {p["name"] for p in body["parameters"]} == {"q", "limit", "hits"}
        assert "canary-create-123" not in json.dumps(body)
        secret = next(c for c in body["configs"] if c["config_key"] == "api_key")
        assert secret == {**secret, "config_value": "********", "is_secret": True}
        assert body["input_schema"]["properties"]["limit"] == {
            "type": "integer",
            "minimum": 1,
            "default": 10,
        }
        actions = list(
            AuditEvent.objects.filter(action__startswith="tool")
            .order_by("id")
            .values_list("action", "actor_name", "target_type")
        )
        assert actions[0] == ("tool.created", "alice-staff", "registry.tool")
        assert [a[0] for a in actions].count("tool_parameter.created") == 3
        assert [a[0] for a in actions].count("tool_config.created") == 2
        dumped = json.dumps(list(AuditEvent.objects.values("before", "after")))
        assert "canary-create-123" not in dumped

    def test_audit_event_carries_request_id(self, staff_client):
        response = staff_client.post(
            TOOLS,
            {"name": "traced", "type": "python"},
            format="json",
            HTTP_X_REQUEST_ID="trace-abc-12345",
        )
        assert response.status_code == 201
        assert response["X-Request-ID"] == "trace-abc-12345"
        event = AuditEvent.objects.get(action="tool.created")
        assert event.request_id == "trace-abc-12345"
        assert event.client_address == "127.0.0.1"

    @pytest.mark.parametrize(
        ("payload", "field"),
        [
            ({"name": "has space", "type": "http"}, "name"),
            ({"name": "x" * 65, "type": "http"}, "name"),
            ({"name": "ok", "type": "ftp"}, "type"),
            ({"type": "http"}, "name"),
            ({"name": "ok"}, "type"),
            ({"name": "ok", "type": "http", "tool_metadata": [1, 2]}, "tool_metadata"),
            ({"name": "ok", "type": "http", "timeout_seconds": 0}, "timeout_seconds"),
            ({"name": "ok", "type": "http", "max_concurrency": 0}, "max_concurrency"),
            ({"name": "ok", "type": "http", "max_response_bytes": 10}, "max_response_bytes"),
            ({"name": "ok", "type": "http", "requires_aproval": True}, "requires_aproval"),
            (
                {"name": "ok", "type": "http", "parameters": [{"name": "a", "type": "decimal"}]},
                "parameters[0].type",
            ),
            (
                {
                    "name": "ok",
                    "type": "http",
                    "parameters": [{"name": "a", "json_schema": {"type": 5}}],
                },
                "parameters[0].json_schema",
            ),
        ],
    )
    def test_bad_input_names_the_field(self, staff_client, payload, field):
        response = staff_client.post(TOOLS, payload, format="json")
        assert response.status_code == 400, response.json()
        err = error(response)
        assert err["code"] == "validation_error"
        assert field in [d["field"] for d in err["details"]], err
        assert field in err["message"]
        assert not Tool.objects.exists()

    def test_duplicate_name_is_a_conflict(self, staff_client):
        assert create(staff_client).status_code == 201
        response = create(staff_client)
        assert response.status_code == 409
        assert error(response)["details"][0]["field"] == "name"

    def test_duplicate_parameter_in_create_rolls_back_everything(self, staff_client):
        response = create(staff_client, parameters=[{"name": "a"}, {"name": "a"}])
        assert response.status_code == 409
        assert not Tool.objects.exists()
        assert not AuditEvent.objects.filter(action__startswith="tool").exists()

    def test_duplicate_config_key_in_create_rolls_back_everything(self, staff_client):
        configs = [
            {"config_key": "base_url", "config_value": "https://a.example"},
            {"config_key": "base_url", "config_value": "https://b.example"},
        ]
        response = create(staff_client, configs=configs)
        assert response.status_code == 409
        body = error(response)
        assert "'base_url' is given twice" in body["message"]
        assert body["details"][0]["field"] == "configs[1].config_key"
        assert not Tool.objects.exists()
        assert not AuditEvent.objects.filter(action__startswith="tool").exists()

    @pytest.mark.parametrize("cost", ["abc", 1e300, -1, "NaN", "Infinity", True, [1], 1_000_000])
    def test_cost_per_call_must_be_a_storable_amount(self, staff_client, cost):
        response = create(staff_client, tool_metadata={"cost_per_call": cost})
        assert response.status_code == 400, response.content
        assert error(response)["details"][0]["field"] == "tool_metadata.cost_per_call"
        assert not Tool.objects.exists()

    @pytest.mark.parametrize("cost", [0, 0.002, "0.0025", "12.5", 999_999.999999])
    def test_cost_per_call_accepts_amounts(self, staff_client, cost):
        response = create(staff_client, tool_metadata={"cost_per_call": cost})
        assert response.status_code == 201, response.content

    def test_malformed_json_is_400(self, staff_client):
        response = staff_client.post(TOOLS, "{not json", content_type="application/json")
        assert response.status_code == 400
        assert error(response)["code"] == "parse_error"

    def test_body_not_an_object(self, staff_client):
        response = staff_client.post(TOOLS, [1, 2], format="json")
        assert response.status_code == 400
        assert error(response)["code"] == "validation_error"

    def test_oversized_body_is_413(self, staff_client, settings):
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
        response = create(staff_client, description="x" * 5000)
        assert response.status_code == 413
        assert error(response)["code"] == "payload_too_large"

    def test_wrong_content_type_is_415(self, staff_client):
        response = staff_client.post(TOOLS, "name=x", content_type="text/plain")
        assert response.status_code == 415

    def test_non_staff_cannot_write(self, plain_client):
        response = create(plain_client)
        assert response.status_code == 403
        assert error(response)["code"] == "permission_denied"

    def test_anonymous_gets_401(self, anon_client):
        response = create(anon_client)
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")


class TestList:
    def test_filters_and_search(self, plain_client):
        ToolFactory(name="alpha", type="http", tool_metadata={"category": "fx"})
        ToolFactory(name="beta", type="database", description="ledger query")
        ToolFactory(name="gamma", type="http", is_active=False)
        names = lambda q: [t["name"] for t in plain_client.get(TOOLS + q).json()["results"]]  # noqa: E731
        assert names("") == ["alpha", "beta", "gamma"]
        assert names("?tool_type=http") == ["alpha", "gamma"]
        assert names("?is_active=false") == ["gamma"]
        assert names("?is_active=true&tool_type=http") == ["alpha"]
        assert names("?category=fx") == ["alpha"]
        assert names("?search=ledger") == ["beta"]
        assert names("?search=ALP") == ["alpha"]

    def test_pagination_is_bounded(self, plain_client):
        for i in range(5):
            ToolFactory(name=f"t{i}")
        body = plain_client.get(TOOLS + "?page=2&page_size=2").json()
        assert body["count"] == 5 and body["page"] == 2 and body["total_pages"] == 3
        assert [t["name"] for t in body["results"]] == ["t2", "t3"]
        for bad in ("page_size=0", "page_size=201", "page_size=abc", "page=0", "page=x"):
            response = plain_client.get(f"{TOOLS}?{bad}")
            assert response.status_code == 400, bad
            assert error(response)["details"][0]["field"] in ("page", "page_size")
        assert plain_client.get(TOOLS + "?page=99").status_code == 404

    @pytest.mark.parametrize(
        ("query", "field"), [("tool_type=ftp", "tool_type"), ("is_active=maybe", "is_active")]
    )
    def test_bad_filters(self, plain_client, query, field):
        response = plain_client.get(f"{TOOLS}?{query}")
        assert response.status_code == 400
        assert error(response)["details"][0]["field"] == field


class TestDetail:
    def test_detail_includes_parameters_configs_and_masks_secrets(self, staff_client):
        tool_id = create(
            staff_client,
            configs=[{"config_key": "token", "config_value": "canary-detail", "is_secret": True}],
            parameters=[{"name": "q", "required": True}],
        ).json()["id"]
        body = staff_client.get(f"{TOOLS}/{tool_id}").json()
        assert body["parameters"][0]["name"] == "q"
        assert body["configs"][0]["config_value"] == "********"
        assert "canary-detail" not in json.dumps(body)

    def test_unknown_and_malformed_ids_are_json_404(self, plain_client):
        response = plain_client.get(f"{TOOLS}/{uuid.uuid4()}")
        assert response.status_code == 404
        assert error(response)["message"] == "Tool not found."
        response = plain_client.get(f"{TOOLS}/not-a-uuid")
        assert response.status_code == 404
        assert error(response)["code"] == "not_found"

    def test_put_replaces_and_audits_before_after(self, staff_client):
        tool_id = create(staff_client, version="1.0.0").json()["id"]
        response = staff_client.put(
            f"{TOOLS}/{tool_id}",
            {"name": "lookup2", "type": "http", "version": "2.0.0", "timeout_seconds": 5},
            format="json",
        )
        assert response.status_code == 200, response.json()
        assert response.json()["version"] == "2.0.0"
        event = AuditEvent.objects.get(action="tool.updated")
        assert event.before["version"] == "1.0.0" and event.after["version"] == "2.0.0"
        assert event.before["name"] == "lookup" and event.after["name"] == "lookup2"

    def test_put_requires_name_and_type(self, staff_client):
        tool_id = create(staff_client).json()["id"]
        response = staff_client.put(f"{TOOLS}/{tool_id}", {"version": "2"}, format="json")
        assert response.status_code == 400
        assert {d["field"] for d in error(response)["details"]} == {"name", "type"}

    def test_patch_and_noop_patch_writes_no_audit(self, staff_client):
        tool_id = create(staff_client).json()["id"]
        before = AuditEvent.objects.count()
        response = staff_client.patch(
            f"{TOOLS}/{tool_id}", {"requires_approval": True}, format="json"
        )
        assert response.status_code == 200 and response.json()["requires_approval"] is True
        assert AuditEvent.objects.count() == before + 1
        staff_client.patch(f"{TOOLS}/{tool_id}", {"requires_approval": True}, format="json")
        assert AuditEvent.objects.count() == before + 1

    def test_patch_rename_to_existing_is_conflict(self, staff_client):
        create(staff_client, name="one")
        tool_id = create(staff_client, name="two").json()["id"]
        response = staff_client.patch(f"{TOOLS}/{tool_id}", {"name": "one"}, format="json")
        assert response.status_code == 409

    def test_patch_cannot_touch_nested_collections(self, staff_client):
        tool_id = create(staff_client).json()["id"]
        response = staff_client.patch(f"{TOOLS}/{tool_id}", {"parameters": []}, format="json")
        assert response.status_code == 400
        assert error(response)["details"][0]["field"] == "parameters"

    def test_delete_deactivates(self, staff_client):
        tool_id = create(staff_client).json()["id"]
        assert staff_client.delete(f"{TOOLS}/{tool_id}").status_code == 204
        assert Tool.objects.get(pk=tool_id).is_active is False
        assert AuditEvent.objects.filter(action="tool.deactivated").count() == 1

    def test_hard_delete_removes_and_audits(self, staff_client):
        tool_id = create(staff_client, parameters=[{"name": "q"}]).json()["id"]
        assert staff_client.delete(f"{TOOLS}/{tool_id}?hard_delete=true").status_code == 204
        assert not Tool.objects.filter(pk=tool_id).exists()
        event = AuditEvent.objects.get(action="tool.deleted")
        assert event.target_id == tool_id and event.before["parameters"][0]["name"] == "q"

    def test_writes_need_staff(self, staff_client, plain_client):
        tool_id = create(staff_client).json()["id"]
        assert plain_client.get(f"{TOOLS}/{tool_id}").status_code == 200
        assert plain_client.patch(f"{TOOLS}/{tool_id}", {}, format="json").status_code == 403
        assert plain_client.delete(f"{TOOLS}/{tool_id}").status_code == 403

    def test_schema_endpoint(self, staff_client):
        tool_id = create(
            staff_client,
            parameters=[
                {"name": "city", "required": True, "description": "City name"},
                {"name": "days", "type": "integer", "default": 3},
                {"name": "raw", "type": "object", "parameter_type": "output"},
            ],
        ).json()["id"]
        schema = staff_client.get(f"{TOOLS}/{tool_id}/schema").json()
        assert schema == {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "default": 3},
            },
            "required": ["city"],
            "additionalProperties": False,
        }
