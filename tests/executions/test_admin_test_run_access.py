"""The admin's test-run page treats a tool the user may not read as one that does not exist."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from executions.models import Execution
from registry.services import tools as tool_services
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_unreadable_tool_is_404_like_a_missing_one():
    tool = tool_services.tool_create(actor=None, name="hidden_tool", type="http")
    outsider = make_user("staff-without-grants", is_staff=True)
    client = Client()
    client.force_login(outsider)
    hidden = client.get(reverse("admin:registry_tool_test_run", args=[tool.pk]))
    missing = client.get(reverse("admin:registry_tool_test_run", args=[uuid.uuid4()]))
    assert hidden.status_code == missing.status_code == 404
    assert b"hidden_tool" not in hidden.content
    posted = client.post(
        reverse("admin:registry_tool_test_run", args=[tool.pk]),
        {"arguments": "{}", "wait_seconds": 1},
    )
    assert posted.status_code == 404 and not Execution.objects.exists()
