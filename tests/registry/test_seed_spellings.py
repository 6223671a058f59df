"""The original Tools Module's clients spell things its way; ToolHub answers them too.

Seed 004 (Tools Module): ``check-permission`` defaults ``required_action`` to
``execute`` and answers ``has_permission``; a tool's ``type`` may come in
upper case; a parameter's default is ``default_value``, a string.
"""

from __future__ import annotations

import pytest

from registry.services import access as access_services
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

TOOLS = "/api/v1/tools"


@pytest.mark.parametrize(
    ("granted", "query", "allowed"),
    [
        ("read", "", False),  # the default asks for execute, which read is not
        ("execute", "", True),
        ("manage", "", True),
        ("read", "?required_action=read", True),
    ],
)
def test_check_permission_asks_for_execute_by_default_and_answers_has_permission(
    staff_client, granted, query, allowed
):
    tool = ToolFactory(name="ledger")
    role = access_services.role_create(actor=None, name="clerks")
    access_services.grant_create(actor=None, role=role, action=granted, tool=tool)

    response = staff_client.get(f"/api/v1/registry/check-permission/{tool.pk}/{role.pk}{query}")

    assert response.status_code == 200
    body = response.json()
    assert body["required_action"] == ("read" if query else "execute")
    assert body["allowed"] is allowed and body["has_permission"] is allowed
    assert body["granted_action"] == granted
