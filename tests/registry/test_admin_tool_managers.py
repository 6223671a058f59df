"""Staff with a grant on single tools use the tool admin within those rights, as in the API."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from registry.models import AuditEvent, ToolConfig
from registry.rights import permissions_of
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services.tools import config_set, tool_create
from tests.factories import make_user
from tests.registry.test_admin import change_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    managed = tool_create(actor=None, name="managed_tool", type="http", description="mine")
    config_set(actor=None, tool=managed, config_key="base_url", config_value="https://a.example")
    readable = tool_create(actor=None, name="readable_tool", type="http")
    hidden = tool_create(actor=None, name="hidden_tool", type="http")
    role = role_services.role_create(actor=None, name="fx-owners")
    grant_services.grant_create(actor=None, role=role, action="manage", tool=managed)
    grant_services.grant_create(actor=None, role=role, action="read", tool=readable)
    # Changing a tool takes the right and the grant (registry.policy).
    role.permissions.add(*role_services.permissions_by_label(permissions_of(["edit_tools"])))
    person = make_user("tool-owner", is_staff=True)
    person.groups.add(role)
    client = Client()
    client.force_login(person)
    return {
        "client": client,
        "managed": managed,
        "readable": readable,
        "hidden": hidden,
        "role": role,
    }


def test_the_catalog_shows_the_tools_they_may_read(world):
    client = world["client"]
    index = client.get(reverse("admin:index")).content.decode()
    assert reverse("admin:registry_tool_changelist") in index
    listing = client.get(reverse("admin:registry_tool_changelist")).content.decode()
    assert "managed_tool" in listing and "readable_tool" in listing
    assert "hidden_tool" not in listing
    hidden = client.get(reverse("admin:registry_tool_change", args=[world["hidden"].pk]))
    assert hidden.status_code == 302  # "does not exist", as for any id they cannot see
    assert client.get(reverse("admin:registry_tool_add")).status_code == 403


def test_manage_lets_them_edit_the_tool_and_its_configs_audited(world):
    client, tool = world["client"], world["managed"]
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    before = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    page = client.get(url).content.decode()
    assert 'name="description"' in page  # an editable form, not a read-only view
    data = change_form_data(tool, description="edited by its owner")
    data.update(
        {
            "configs-TOTAL_FORMS": int(data["configs-TOTAL_FORMS"]) + 1,
            "configs-1-tool": tool.pk,
            "configs-1-config_key": "timeout_seconds",
            "configs-1-value": "7",
        }
    )
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    tool.refresh_from_db()
    assert tool.description == "edited by its owner"
    assert ToolConfig.objects.get(tool=tool, config_key="timeout_seconds").plain_value == 7
    actors = set(AuditEvent.objects.filter(id__gt=before).values_list("actor_name", flat=True))
    assert actors == {"tool-owner"}


def test_read_only_tools_stay_read_only(world):
    client, tool = world["client"], world["readable"]
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="description"' not in page.content.decode()
    response = client.post(url, change_form_data(tool, description="not allowed"))
    assert response.status_code == 403
    tool.refresh_from_db()
    assert tool.description == ""


def test_approval_settings_stay_with_platform_admins(world):
    client, tool = world["client"], world["managed"]
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    page = client.get(url).content.decode()
    assert 'name="requires_approval"' not in page and 'name="description"' in page
    response = client.post(url, change_form_data(tool, requires_approval="on"))
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.requires_approval is False


def test_a_manager_sees_and_edits_the_tools_existing_parts(world):
    """Django empties an inline's rows for users without the model's own permission
    (asked without the tool): the tool's owner saw no parameter, config or rate limit."""
    from registry.services.tools import parameter_create

    tool = world["managed"]
    parameter_create(actor=None, tool=tool, name="city", type="string")
    page = world["client"].get(reverse("admin:registry_tool_change", args=[tool.pk]))
    html = page.content.decode()
    assert 'name="configs-TOTAL_FORMS" value="1"' in html
    assert 'name="parameters-TOTAL_FORMS" value="1"' in html
    assert "https://a.example" in html and 'value="city"' in html


def test_a_manage_grant_without_the_edit_right_leaves_the_tool_read_only(world):
    world["role"].permissions.clear()
    client, tool = world["client"], world["managed"]
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="description"' not in page.content.decode()
    response = client.post(url, change_form_data(tool, description="not allowed"))
    assert response.status_code == 403
    tool.refresh_from_db()
    assert tool.description == "mine"


def test_what_the_tool_runs_stays_with_platform_admins_in_the_admin(world):
    client, tool = world["client"], world["managed"]
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    data = change_form_data(tool)
    data["configs-0-value"] = "https://collector.example"
    response = client.post(url, data, follow=True)
    assert "Only platform admins change what" in response.content.decode()
    assert ToolConfig.objects.get(tool=tool, config_key="base_url").value == "https://a.example"
