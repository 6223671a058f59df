"""Text no record can hold (an unpaired surrogate, a NUL character) is refused when it
is saved, by every write path, with a 400 naming the field: never stored (a secret
encrypted with it broke every later call), never a database error."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from registry.importers.run import import_content
from registry.models import Tool, ToolConfig
from registry.services import tools as tool_services
from toolhub.exceptions import InvalidInput

pytestmark = pytest.mark.django_db

# As a client writes them in JSON: escapes of an unpaired surrogate and of NUL.
BAD_ESCAPES = [pytest.param("\\udfff", id="surrogate"), pytest.param("\\u0000", id="nul")]


@pytest.fixture
def tool(db):
    return tool_services.tool_create(
        actor=None,
        name="text_target",
        type="http",
        configs=[{"config_key": "base_url", "config_value": "https://api.example"}],
    )


def _api_cases():
    # (method, path, JSON body with {bad} where the text goes, the field the 400 names)
    configs = "/api/v1/tools/{tool}/configs"
    return [
        pytest.param(
            "post",
            configs,
            '{"config_key": "misc", "config_value": "x{bad}y", "is_secret": true}',
            "config_value",
            id="secret-config",
        ),
        pytest.param(
            "post",
            configs,
            '{"config_key": "misc", "config_value": {"note": ["ok", "x{bad}y"]}}',
            "config_value.note[1]",
            id="plain-config",
        ),
        pytest.param(
            "patch",
            "/api/v1/tools/{tool}",
            '{"tool_metadata": {"category": "x{bad}y"}}',
            "tool_metadata.category",
            id="tool-metadata",
        ),
        pytest.param(
            "patch",
            "/api/v1/tools/{tool}",
            '{"approval_condition": {"properties": {"a": {"const": "x{bad}y"}}}}',
            "approval_condition.properties.a.const",
            id="approval-condition",
        ),
        pytest.param(
            "post",
            "/api/v1/tools",
            '{"name": "other_tool", "type": "http", "configs": '
            '[{"config_key": "token", "config_value": "x{bad}y", "is_secret": true}]}',
            "configs[0].config_value",
            id="nested-secret-config",
        ),
    ]


@pytest.mark.parametrize("bad", BAD_ESCAPES)
@pytest.mark.parametrize(("method", "path", "body", "field"), _api_cases())
def test_unencodable_text_in_a_field_is_a_400_naming_the_field(
    staff_client, tool, bad, method, path, body, field
):
    before = (Tool.objects.count(), ToolConfig.objects.count())
    send = getattr(staff_client, method)
    response = send(
        path.format(tool=tool.pk),
        body.replace("{bad}", bad),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert [d["field"] for d in error["details"]] == [field], error
    assert (Tool.objects.count(), ToolConfig.objects.count()) == before
    tool.refresh_from_db()
    assert tool.tool_metadata == {} and tool.approval_condition == {}


@pytest.mark.parametrize(
    ("typed", "field"),
    [
        pytest.param('{"note": "x\\udfffy"}', "tool_metadata", id="metadata-surrogate"),
        pytest.param('{"note": "x\\u0000y"}', "tool_metadata", id="metadata-nul"),
        pytest.param('["x\\udfffy"]', "configs-0-value", id="config-surrogate"),
        pytest.param('{"x\\u0000y": 1}', "configs-0-value", id="config-nul"),
    ],
)
def test_the_admin_refuses_unencodable_text_and_saves_nothing(superuser, typed, field):
    """Typed as JSON escapes (a form itself cannot carry an unpaired surrogate, and
    its text fields already refuse NUL)."""
    client = Client()
    client.force_login(superuser)
    data = {
        "name": "admin_text",
        "description": "",
        "type": "http",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 1,
        "configs-INITIAL_FORMS": 0,
        "configs-0-config_key": "extra",
        "configs-0-value": "plain",
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    data[field] = typed
    response = client.post(reverse("admin:registry_tool_add"), data)
    assert response.status_code == 200, response.status_code
    assert "unpaired surrogate" in response.content.decode() or (
        "NUL characters" in response.content.decode()
    )
    assert not Tool.objects.filter(name="admin_text").exists()


@pytest.mark.parametrize(
    ("line", "path"),
    [
        pytest.param('    description: "x\\uDFFFy"', "/tools/0/description", id="surrogate"),
        pytest.param('    description: "x\\0y"', "/tools/0/description", id="nul"),
        pytest.param('    configs: {token: "x\\uDFFFy"}', "/tools/0/configs/token", id="config"),
    ],
)
def test_an_import_with_unencodable_text_names_the_path_and_writes_nothing(line, path):
    report = import_content(f"tools:\n  - name: imported\n    type: http\n{line}\n", actor=None)
    assert not report.ok and not report.written
    assert [(p.path, p.code) for p in report.errors] == [(path, "unencodable")]
    assert not Tool.objects.filter(name="imported").exists()


@pytest.mark.parametrize(
    ("save", "field"),
    [
        pytest.param(
            lambda: tool_services.tool_create(
                actor=None, name="saved_text", type="http", description="a\x00b"
            ),
            "description",
            id="tool-description",
        ),
        pytest.param(
            lambda: tool_services.tool_create(
                actor=None, name="saved_text", type="http", tool_metadata={"k\udfff": 1}
            ),
            "tool_metadata.k\ufffd",
            id="tool-metadata-key",
        ),
        pytest.param(lambda: Group.objects.create(name="role\udfff"), "name", id="role-name"),
    ],
)
def test_every_save_refuses_unencodable_text_naming_the_field(save, field):
    with pytest.raises(InvalidInput) as refused:
        save()
    assert [d["field"] for d in refused.value.details] == [field]
