"""The admin: tool editing with inlines goes through the services; the audit log is read-only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from registry.models import AuditEvent, Tool, ToolConfig
from registry.services.tools import config_set, parameter_create, tool_create

pytestmark = pytest.mark.django_db

CANARY = "admin-canary-5f3a9"


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def tool(db):
    tool = tool_create(actor=None, name="fx_rates", type="http", description="FX rates")
    parameter_create(actor=None, tool=tool, name="base", required=True)
    config_set(actor=None, tool=tool, config_key="base_url", config_value="https://fx.example")
    config_set(actor=None, tool=tool, config_key="api_key", config_value=CANARY, is_secret=True)
    return tool


def change_form_data(tool, **overrides) -> dict:
    params = list(tool.parameters.all())
    configs = list(tool.configs.order_by("config_key"))
    data = {
        "name": tool.name,
        "description": tool.description,
        "type": tool.type,
        "version": tool.version,
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": tool.timeout_seconds,
        "max_retries": tool.max_retries,
        "cache_ttl_seconds": tool.cache_ttl_seconds,
        "max_concurrency": "",
        "max_response_bytes": tool.max_response_bytes,
        "parameters-TOTAL_FORMS": len(params),
        "parameters-INITIAL_FORMS": len(params),
        "configs-TOTAL_FORMS": len(configs),
        "configs-INITIAL_FORMS": len(configs),
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    for i, p in enumerate(params):
        data.update(
            {
                f"parameters-{i}-id": p.pk,
                f"parameters-{i}-tool": tool.pk,
                f"parameters-{i}-name": p.name,
                f"parameters-{i}-parameter_type": p.parameter_type,
                f"parameters-{i}-type": p.type,
                f"parameters-{i}-required": "on" if p.required else "",
                f"parameters-{i}-default_json": "",
                f"parameters-{i}-description": p.description,
                f"parameters-{i}-json_schema": "{}",
                f"parameters-{i}-position": p.position,
            }
        )
    for i, c in enumerate(configs):
        data.update(
            {
                f"configs-{i}-id": c.pk,
                f"configs-{i}-tool": tool.pk,
                f"configs-{i}-config_key": c.config_key,
                f"configs-{i}-value": "" if c.is_secret else c.plain_value,
                f"configs-{i}-is_secret": "on" if c.is_secret else "",
            }
        )
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_changelist_and_change_page_never_show_the_secret(admin_client, tool):
    listing = admin_client.get(reverse("admin:registry_tool_changelist"))
    assert listing.status_code == 200 and b"fx_rates" in listing.content
    page = admin_client.get(reverse("admin:registry_tool_change", args=[tool.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert CANARY not in html
    assert "https://fx.example" in html  # plain configs are shown
    assert "Input JSON Schema" in html


def test_editing_through_the_admin_is_audited_and_keeps_the_secret(admin_client, tool, superuser):
    data = change_form_data(
        tool,
        description="FX rates, hourly",
        **{
            "configs-1-value": "https://fx2.example",  # base_url (sorted: api_key, base_url)
            "parameters-TOTAL_FORMS": 2,
            "parameters-1-name": "amount",
            "parameters-1-parameter_type": "input",
            "parameters-1-type": "number",
            "parameters-1-default_json": "1",
            "parameters-1-description": "Amount",
            "parameters-1-json_schema": '{"minimum": 0}',
            "parameters-1-position": "1",
            "parameters-1-tool": tool.pk,
        },
    )
    response = admin_client.post(reverse("admin:registry_tool_change", args=[tool.pk]), data)
    assert response.status_code == 302, [
        line for line in response.content.decode().splitlines() if "error" in line.lower()
    ][:20]
    tool.refresh_from_db()
    assert tool.description == "FX rates, hourly"
    assert ToolConfig.objects.get(tool=tool, config_key="api_key").value == CANARY
    assert ToolConfig.objects.get(tool=tool, config_key="base_url").value == "https://fx2.example"
    amount = tool.parameters.get(name="amount")
    assert amount.default == 1 and amount.has_default and amount.json_schema == {"minimum": 0}
    events = AuditEvent.objects.filter(actor=superuser).values_list("action", flat=True)
    assert set(events) == {"tool.updated", "tool_config.updated", "tool_parameter.created"}
    assert "api_key" not in " ".join(
        AuditEvent.objects.filter(action="tool_config.updated").values_list(
            "target_repr", flat=True
        )
    )


def test_replacing_a_secret_in_the_admin(admin_client, tool):
    data = change_form_data(tool, **{"configs-0-value": "new-secret-value"})
    response = admin_client.post(reverse("admin:registry_tool_change", args=[tool.pk]), data)
    assert response.status_code == 302
    assert ToolConfig.objects.get(tool=tool, config_key="api_key").value == "new-secret-value"
    assert "new-secret-value" not in str(list(AuditEvent.objects.values("before", "after")))


@pytest.mark.parametrize("new_key", [None, "api_key_2"])
def test_unticking_secret_in_the_admin_never_reveals_the_stored_value(admin_client, tool, new_key):
    # The value left empty means "keep the stored one": unticked, that secret would
    # have become a plain value shown on the page (under a new key, too).
    overrides = {"configs-0-is_secret": ""}
    if new_key:
        overrides["configs-0-config_key"] = new_key
    data = change_form_data(tool, **overrides)
    response = admin_client.post(reverse("admin:registry_tool_change", args=[tool.pk]), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "stays secret" in html and CANARY not in html
    assert ToolConfig.objects.get(tool=tool, config_key="api_key").is_secret
    assert not ToolConfig.objects.filter(tool=tool, is_secret=False, plain_value=CANARY).exists()


def test_invalid_schema_fragment_is_shown_on_the_form(admin_client, tool):
    data = change_form_data(tool, **{"parameters-0-json_schema": '{"minimum": "x"}'})
    response = admin_client.post(reverse("admin:registry_tool_change", args=[tool.pk]), data)
    assert response.status_code == 200
    assert "not a valid JSON Schema" in response.content.decode()


def test_add_tool_in_admin(admin_client):
    data = {
        "name": "new_tool",
        "description": "",
        "type": "python",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": '{"category": "math"}',
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 1,
        "configs-INITIAL_FORMS": 0,
        "configs-0-config_key": "token",
        "configs-0-value": "typed-secret",
        "configs-0-is_secret": "on",
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    response = admin_client.post(reverse("admin:registry_tool_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    tool = Tool.objects.get(name="new_tool")
    assert tool.configs.get(config_key="token").value == "typed-secret"
    # A Python tool stores the function it runs, the one its name says when none is given.
    assert tool.configs.get(config_key="function").value == "new_tool"
    assert list(
        AuditEvent.objects.filter(action__startswith="tool")
        .order_by("id")
        .values_list("action", flat=True)
    ) == [
        "tool.created",
        "tool_config.created",
        "tool_config.created",
    ]


def test_deactivate_action_is_audited(admin_client, tool):
    response = admin_client.post(
        reverse("admin:registry_tool_changelist"),
        {"action": "deactivate_tools", "_selected_action": [tool.pk]},
    )
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.is_active is False
    assert AuditEvent.objects.filter(action="tool.deactivated").count() == 1


def test_audit_log_is_read_only_even_for_superusers(admin_client, tool):
    event = AuditEvent.objects.first()
    listing = admin_client.get(reverse("admin:registry_auditevent_changelist"))
    assert listing.status_code == 200
    assert b"tool.created" in listing.content
    assert admin_client.get(reverse("admin:registry_auditevent_add")).status_code == 403
    detail = admin_client.get(reverse("admin:registry_auditevent_change", args=[event.pk]))
    assert detail.status_code == 200 and b"Save" not in detail.content
    post = admin_client.post(
        reverse("admin:registry_auditevent_change", args=[event.pk]), {"action": "x"}
    )
    assert post.status_code == 403
    delete = admin_client.post(
        reverse("admin:registry_auditevent_delete", args=[event.pk]), {"post": "yes"}
    )
    assert delete.status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk, action=event.action).exists()


def test_audit_rows_refuse_edits_in_code(tool):
    event = AuditEvent.objects.first()
    event.action = "tampered"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().update(action="x")
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().delete()


def test_audit_filters_work(admin_client, tool):
    url = reverse("admin:registry_auditevent_changelist")
    for query in ("?action=tool.created", "?target_type=registry.toolconfig", "?q=fx_rates"):
        assert admin_client.get(url + query).status_code == 200
