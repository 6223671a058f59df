"""A tool's and an MCP server's managed fields are declared once, on their model modules
(``TOOL_FIELDS``, ``MCP_SERVER_FIELDS``); every face that must agree with that list does:
the API shows and accepts each field, the audit snapshot records each, and the admin's
form edits each and lays it out in a fieldset (a form field outside every fieldset is
never shown)."""

from __future__ import annotations

import pytest
from django.contrib import admin

from registry.admin.mcp import MCPServerForm
from registry.api.mcp_serializers import MCPServerInputSerializer, MCPServerOutputSerializer
from registry.api.serializers import ToolInputSerializer, ToolOutputSerializer
from registry.models import MCPServer, Tool
from registry.models.mcp.server import MCP_SERVER_FIELDS
from registry.models.tools import TOOL_FIELDS
from registry.services.mcp import mcp_server_snapshot
from registry.services.tools import tool_snapshot


def fieldset_fields(model) -> set[str]:
    model_admin = admin.site._registry[model]
    return {name for _, options in model_admin.fieldsets for name in options["fields"]}


@pytest.mark.parametrize(
    ("model", "fields", "output", "input_serializer"),
    [
        (Tool, TOOL_FIELDS, ToolOutputSerializer, ToolInputSerializer),
        (MCPServer, MCP_SERVER_FIELDS, MCPServerOutputSerializer, MCPServerInputSerializer),
    ],
    ids=["tool", "mcp-server"],
)
def test_the_api_and_the_admin_show_every_managed_field(model, fields, output, input_serializer):
    assert set(fields) <= set(output.Meta.fields)
    assert set(fields) <= set(input_serializer().fields)
    form_fields = set(admin.site._registry[model].form.base_fields)
    assert set(fields) <= form_fields
    assert form_fields <= fieldset_fields(model)


def test_the_mcp_server_form_edits_the_managed_fields_and_the_secrets():
    assert set(MCPServerForm.Meta.fields) == {*MCP_SERVER_FIELDS, "env", "auth_token"} | {
        "clear_auth_token"
    }


@pytest.mark.django_db
def test_the_audit_snapshots_record_every_managed_field():
    tool = Tool.objects.create(name="snap", type="http")
    server = MCPServer.objects.create(name="snap", url="https://mcp.example/mcp")
    assert set(TOOL_FIELDS) <= set(tool_snapshot(tool))
    assert set(MCP_SERVER_FIELDS) <= set(mcp_server_snapshot(server))
