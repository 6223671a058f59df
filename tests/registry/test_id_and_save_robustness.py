"""Ids beyond the database's integer range and JSON numbers no column stores: a clear
400 or form error naming the field, never a 500 and never a false "duplicate"."""

from __future__ import annotations

import math

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from registry.models import Agent, AuditEvent, Role, Tool, ToolConfig
from registry.services import agents as agent_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_user
from toolhub.api.params import MAX_DB_INTEGER
from toolhub.exceptions import Conflict, InvalidInput

pytestmark = pytest.mark.django_db

HUGE = 99999999999999999999  # beyond any integer column
OUT_OF_RANGE = [HUGE, MAX_DB_INTEGER + 1, MAX_DB_INTEGER, 2**31]


@pytest.fixture
def owner(db):
    return make_user("owner-oskar")


@pytest.fixture
def role(db):
    return role_services.role_create(actor=None, name="robust-ops")


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def assert_role_ids_error(response, value) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert {d["field"] for d in error["details"]} == {"role_ids"}, error
    assert "role_ids" in error["message"] and str(value) in error["message"], error


# 1. Role ids in the API.


def test_agent_create_with_out_of_range_role_ids_is_a_400(staff_client, owner, role):
    for value in OUT_OF_RANGE:
        response = staff_client.post(
            "/api/v1/agents",
            {"name": "x", "owner": owner.username, "role_ids": [role.pk, value]},
            format="json",
        )
        assert_role_ids_error(response, value)
        assert "role_ids[1]" in response.json()["error"]["message"]
    assert not Agent.objects.exists()
    ok = staff_client.post(
        "/api/v1/agents",
        {"name": "x", "owner": owner.username, "role_ids": [role.pk]},
        format="json",
    )
    assert ok.status_code == 201 and ok.json()["role_ids"] == [role.pk]


def test_agent_update_with_out_of_range_role_ids_is_a_400(staff_client, owner, role):
    agent = agent_services.agent_create(actor=None, name="y", owner=owner, role_ids=[role.pk])
    for value in OUT_OF_RANGE:
        response = staff_client.patch(
            f"/api/v1/agents/{agent.pk}", {"role_ids": [value]}, format="json"
        )
        assert_role_ids_error(response, value)
        assert "role_ids[0]" in response.json()["error"]["message"]
    assert list(agent.user.groups.all()) == [role]


# 2. Ids beyond the range in the admin's choice fields.


def test_admin_agent_form_refuses_out_of_range_roles(admin_client, owner, role):
    url = reverse("admin:registry_agent_add")
    for value in [*OUT_OF_RANGE, "\u0661"]:
        response = admin_client.post(
            url,
            {
                "name": "admin-bot",
                "owner": owner.pk,
                "description": "",
                "is_active": "on",
                "roles": [role.pk, value],
            },
        )
        assert response.status_code == 200, value
        errors = response.context["adminform"].form.errors
        assert list(errors) == ["roles"], errors
        assert "Select a valid choice" in errors["roles"][0]
    assert not Agent.objects.exists()
    response = admin_client.post(
        url,
        {"name": "admin-bot", "owner": owner.pk, "description": "", "roles": [role.pk]},
    )
    assert response.status_code == 302
    assert list(Agent.objects.get(name="admin-bot").user.groups.all()) == [role]


def test_admin_role_form_refuses_out_of_range_permissions(admin_client):
    url = reverse("admin:registry_role_add")
    perm = Permission.objects.get(content_type__app_label="registry", codename="review_all")
    for value in OUT_OF_RANGE:
        response = admin_client.post(
            url, {"name": "robust-role", "description": "", "permissions": ["review", value]}
        )
        assert response.status_code == 200, value
        errors = response.context["adminform"].form.errors
        assert list(errors) == ["permissions"], errors
        assert "Select a valid choice" in errors["permissions"][0]
    assert not Role.objects.filter(name="robust-role").exists()
    response = admin_client.post(
        url, {"name": "robust-role", "description": "", "permissions": ["review"]}
    )
    assert response.status_code == 302
    assert list(Role.objects.get(name="robust-role").permissions.all()) == [perm]


# 3. NaN and Infinity in JSON values, and what the database refuses on save.


def tool_add_data(**overrides) -> dict:
    data = {
        "name": "nan_tool",
        "description": "",
        "type": "python",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 0,
        "configs-INITIAL_FORMS": 0,
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    data.update(overrides)
    return data


def config_data(value: str) -> dict:
    return {
        "configs-TOTAL_FORMS": 1,
        "configs-0-config_key": "k3",
        "configs-0-value": value,
    }


def parameter_data(**fields) -> dict:
    data = {
        "parameters-TOTAL_FORMS": 1,
        "parameters-0-name": "x",
        "parameters-0-parameter_type": "input",
        "parameters-0-type": "number",
        "parameters-0-default_json": "",
        "parameters-0-description": "",
        "parameters-0-json_schema": "{}",
        "parameters-0-position": 0,
    }
    data.update({f"parameters-0-{k}": v for k, v in fields.items()})
    return data


def assert_refused(response, *messages: str) -> None:
    """The add form is shown again with its errors; nothing saved, no false duplicate."""
    page = response.content.decode()
    assert response.status_code == 200, page[:2000]
    assert "Duplicate" not in page and "already exists" not in page
    for message in messages:
        assert message in page, message
    assert not Tool.objects.filter(name="nan_tool").exists()
    assert not AuditEvent.objects.filter(action__startswith="tool").exists()


@pytest.mark.parametrize("value", ["NaN", "[Infinity]", '{"a": [1, -Infinity]}', "1e999"])
def test_admin_config_value_with_non_finite_numbers_is_a_form_error(admin_client, value):
    response = admin_client.post(
        reverse("admin:registry_tool_add"), tool_add_data(**config_data(value))
    )
    assert_refused(response, "numbers must be finite")


@pytest.mark.parametrize(
    "fields",
    [
        {"default_json": "NaN"},
        {"default_json": "[Infinity]", "type": "array"},
        {"json_schema": '{"enum": [1, NaN]}'},
    ],
)
def test_admin_parameter_with_non_finite_numbers_is_a_form_error(admin_client, fields):
    response = admin_client.post(
        reverse("admin:registry_tool_add"), tool_add_data(**parameter_data(**fields))
    )
    assert_refused(response)
    formset = next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == "parameters"
    )
    assert any("finite" in str(e) or "not valid JSON" in str(e) for e in formset.errors[0].values())
    errors = formset.errors[0]
    assert set(errors) & {"default_json", "json_schema", "__all__"}, errors


@pytest.mark.parametrize("field", ["tool_metadata", "approval_condition"])
def test_admin_tool_json_fields_with_non_finite_numbers_are_form_errors(admin_client, field):
    response = admin_client.post(
        reverse("admin:registry_tool_add"), tool_add_data(**{field: '{"score": NaN}'})
    )
    assert_refused(response, "score")
    assert list(response.context["adminform"].form.errors) == [field]


def test_services_refuse_non_finite_numbers_naming_the_field(db):
    tool = tool_services.tool_create(actor=None, name="svc_tool", type="http")
    cases = [
        (
            lambda: tool_services.config_set(
                actor=None, tool=tool, config_key="k3", config_value=[1, float("inf")]
            ),
            "config_value",
            "config_value[1]",
        ),
        (
            lambda: tool_services.config_set(
                actor=None, tool=tool, config_key="s", config_value=math.nan, is_secret=True
            ),
            "config_value",
            "config_value",
        ),
        (
            lambda: tool_services.parameter_create(
                actor=None, tool=tool, name="p", type="number", default=math.nan
            ),
            "default",
            "default",
        ),
        (
            lambda: tool_services.parameter_create(
                actor=None, tool=tool, name="q", json_schema={"enum": [{"v": -math.inf}]}
            ),
            "json_schema",
            "json_schema.enum[0].v",
        ),
        (
            lambda: tool_services.tool_create(
                actor=None, name="t2", type="python", tool_metadata={"a": {"b": math.nan}}
            ),
            "tool_metadata",
            "tool_metadata.a.b",
        ),
        (
            lambda: tool_services.tool_create(
                actor=None,
                name="t3",
                type="python",
                configs=[{"config_key": "c", "config_value": math.nan}],
            ),
            "configs[0].config_value",
            "config_value",
        ),
    ]
    for call, field, where in cases:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert [d["field"] for d in caught.value.details] == [field]
        assert where in caught.value.details[0]["message"]
    assert not tool.configs.exists() and not tool.parameters.exists()
    assert list(Tool.objects.values_list("name", flat=True)) == ["svc_tool"]


def test_save_calls_only_unique_violations_duplicates(db):
    tool = tool_services.tool_create(actor=None, name="save_tool", type="http")
    tool_services.config_set(actor=None, tool=tool, config_key="k1", config_value=1)
    # A value the database itself refuses (SQLite: CHECK JSON_VALID; PostgreSQL: jsonb).
    broken = ToolConfig(tool=tool, config_key="k3", plain_value=math.nan)
    with pytest.raises(InvalidInput) as caught:
        tool_services._save(broken, "Duplicate config key 'k3'.", "config_key")
    assert "Duplicate" not in caught.value.message and "refused" in caught.value.message
    assert caught.value.details[0]["code"] != "unique"
    dup = ToolConfig(tool=tool, config_key="k1", plain_value=2)
    with pytest.raises(Conflict) as conflict:
        tool_services._save(dup, "Duplicate config key 'k1'.", "config_key")
    assert conflict.value.details[0]["field"] == "config_key"
    assert list(tool.configs.values_list("config_key", flat=True)) == ["k1"]
