"""The hand-written execution JSON says exactly what DRF's generic serializer would."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIRequestFactory

from executions.api.serializers import ExecutionSerializer
from executions.models import Execution
from registry.services import tools as tool_services
from tests.factories import make_user

pytestmark = [pytest.mark.django_db]


def variants():
    user = make_user("json-caller")
    role = Group.objects.create(name="json-role")
    tool = tool_services.tool_create(actor=None, name="json_tool", type="http")
    now = timezone.now()
    common = {"tool": tool, "tool_name": tool.name, "principal": user, "principal_name": "x"}
    return [
        Execution.objects.create(status="queued", queued_at=now, **common),
        Execution.objects.create(
            status="succeeded",
            role=role,
            roles_used=["json-role"],
            input_data={"a": 1, "nested": {"b": [1, 2.5, None]}},
            output_data={"status_code": 200, "data": "ünïcode"},
            cost=Decimal("0.0025"),
            attempts=2,
            execution_time_ms=12.345,
            chars_in=10,
            chars_out=20,
            upstream_status=200,
            started_at=now,
            finished_at=now + timedelta(milliseconds=12),
            request_id="req-1",
            **common,
        ),
        Execution.objects.create(
            status="failed",
            error_type="upstream_error",
            error_message="boom",
            output_truncated=True,
            output_artifact="executions/x.json",
            cost=Decimal("12"),
            **common,
        ),
        Execution.objects.create(
            status="denied",
            reason_code="tool_not_found",
            requested_tool="nope",
            principal=user,
            principal_name="x",
            finished_at=now,
        ),
    ]


@pytest.mark.parametrize("with_request", [True, False])
def test_direct_json_equals_the_generic_serializer(with_request):
    request = APIRequestFactory().get("/") if with_request else None
    context = {"request": request} if request else {}
    for execution in variants():
        fresh = Execution.objects.get(pk=execution.pk)
        for instance in (execution, fresh):
            serializer = ExecutionSerializer(instance, context=context)
            assert serializer.data == serializer.generic_representation(instance)
            assert list(serializer.data) == list(serializer.generic_representation(instance))


def test_many_uses_the_same_json():
    executions = variants()
    data = ExecutionSerializer(executions, many=True).data
    assert [row["id"] for row in data] == [str(e.pk) for e in executions]
    assert all(uuid.UUID(row["id"]) for row in data)


REQUESTS = [
    {"tool": "t"},
    {"tool_id": "8d3c6a8e-8c43-4d7c-9a55-2f1c5f6b4a10", "input_data": {"a": 1}, "wait": True},
    {"tool": " spaced ", "input_data": '{"a": 1}', "wait": 2.5, "role": "r"},
    {"tool": "t", "arguments": {"x": None}, "role_id": 3, "agent_id": "ignored"},
    {"tool": "t", "input_data": None, "role": None, "role_id": None, "agent_id": None},
    {"tool": "t", "arguments": None},
    {"tool": 5, "wait": 0},
    {},
    {"tool": ""},
    {"tool": "   "},
    {"tool": None},
    {"tool_id": None, "tool": "t"},
    {"tool": True},
    {"tool": ["t"]},
    {"tool": {"n": 1}},
    {"tool": "a", "tool_id": "b"},
    {"tool": "t", "input_data": {"a": 1}, "arguments": {"a": 2}},
    {"tool": "t", "input_data": None, "arguments": {"a": 2}},
    {"tool": "t", "role": "r", "role_id": 3},
    {"tool": "t", "wait": None},
    {"tool": "t", "wait": "yes"},
    {"tool": "t", "wait": -1},
    {"tool": "t", "wait": 4000},
    {"tool": "t", "role": ""},
    {"tool": "t", "role_id": False},
    {"tool": "t", "bogus": 1, "other": 2},
    {"tool": None, "wait": None, "role": "", "agent_id": []},
    {"tool": "a\x00b"},
    {"tool_id": "x\x00", "role": "r\x00\ud800"},
    {"tool": "\ud800"},
    {"tool": "t", "role": "\udfff", "agent_id": "\x00"},
    ["not", "an", "object"],
    "text",
]


@pytest.mark.parametrize("payload", REQUESTS, ids=[repr(r)[:40] for r in REQUESTS])
def test_direct_request_parsing_equals_the_generic_serializer(payload):
    from rest_framework import serializers

    from executions.api.serializers import ExecutionRequestSerializer

    def outcome(generic: bool):
        serializer = ExecutionRequestSerializer(data=payload)
        if generic:
            serializer.to_internal_value = serializer.generic_to_internal_value
        try:
            ok = serializer.is_valid()
        except serializers.ValidationError as exc:  # pragma: no cover - is_valid catches
            return ("raised", exc.detail)
        return (ok, dict(serializer.validated_data) if ok else serializer.errors)

    assert outcome(generic=False) == outcome(generic=True)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"tool": "t", "input_data": {"a": 1}, "arguments": {"a": 2}}, "arguments"),
        ({"tool": "t", "input_data": None, "arguments": {"a": 2}}, "arguments"),
        ({"tool": "t", "role": "r", "role_id": 3}, "role"),
    ],
)
def test_an_alias_and_its_field_together_are_refused(payload, field):
    from executions.api.serializers import ExecutionRequestSerializer

    serializer = ExecutionRequestSerializer(data=payload)
    assert not serializer.is_valid()
    assert "not both" in str(serializer.errors[field][0])
