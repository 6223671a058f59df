"""Execution JSON. Field names follow the original module: id, tool_id, tool_name, agent_id, …"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import get_error_detail
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from executions.jsonsafe import storable_text
from executions.models import Approval, Execution, ExecutionStatus
from executions.services.execution_audit import COST_SCALE


class ExecutionSerializer(serializers.ModelSerializer):
    tool_id = serializers.UUIDField(allow_null=True)
    agent_id = serializers.UUIDField(allow_null=True)
    role_id = serializers.IntegerField(allow_null=True)
    principal = serializers.CharField(source="principal_name")
    links = serializers.SerializerMethodField()
    input_data = serializers.JSONField()
    output_data = serializers.JSONField()
    guard_decisions = serializers.JSONField(
        help_text="What each guard decided: guard, stage, action and where in the output "
        "(JSON path and offsets; never the text found)."
    )
    guard_notes = serializers.SerializerMethodField(
        help_text="What flagging guards say about the output, for the agent to read."
    )
    cached_from = serializers.UUIDField(
        source="cached_from_id",
        allow_null=True,
        help_text="The execution whose result this call was answered with (result cache).",
    )

    class Meta:
        model = Execution
        fields = [
            "id",
            "tool_id",
            "tool_name",
            "tool_version",
            "agent_id",
            "principal",
            "role_id",
            "roles_used",
            "status",
            "reason_code",
            "input_data",
            "output_data",
            "output_truncated",
            "error_type",
            "error_message",
            "upstream_status",
            "guard_decisions",
            "guard_notes",
            "attempts",
            "execution_time_ms",
            "chars_in",
            "chars_out",
            "cost",
            "input_hash",
            "cached_from",
            "request_id",
            "entry_point",
            "client_name",
            "client_version",
            "protocol_version",
            "oauth_client_id",
            "oauth_client_name",
            "upstream_connection_id",
            "trace_id",
            "created_at",
            "started_at",
            "finished_at",
            "links",
        ]

    def to_representation(self, instance):
        # The generic path builds ~30 field objects per serializer (a few ms per
        # call on the hot path); this writes the same JSON directly.
        # tests/executions/test_serializers.py holds it equal to the generic one.
        return execution_json(instance, self.context.get("request"))

    def generic_representation(self, instance):
        return super().to_representation(instance)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_links(self, obj) -> dict:
        return _links(obj, self.context.get("request"))

    def get_guard_notes(self, obj) -> list[str]:
        return guard_notes(obj)


def guard_notes(obj: Execution) -> list[str]:
    """The messages of the guards that flagged the call's output."""
    return [
        d["message"]
        for d in obj.guard_decisions or []
        if d.get("action") == "flag" and d.get("message")
    ]


def _when(value) -> str | None:
    """DRF's DateTimeField output: ISO 8601 in the current time zone, UTC as ``Z``."""
    if value is None:
        return None
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _id(value) -> str | None:
    return str(value) if value is not None else None


def _links(obj: Execution, request=None) -> dict:
    base = f"/api/v1/executions/{obj.pk}"
    links = {"self": base}
    if obj.output_artifact:
        links["output"] = f"{base}/output"
    if obj.status == ExecutionStatus.PENDING_APPROVAL:  # where a person decides on it
        approval_id = Approval.objects.filter(execution_id=obj.pk).values_list("pk", flat=True)
        for pk in approval_id[:1]:
            links["approval"] = f"/api/v1/approvals/{pk}"
    if request is not None:
        links = {k: request.build_absolute_uri(v) for k, v in links.items()}
    return links


def execution_json(obj: Execution, request=None) -> dict:
    """An execution's JSON, field for field what ``ExecutionSerializer`` declares."""
    cost = obj.cost
    return {
        "id": str(obj.pk),
        "tool_id": _id(obj.tool_id),
        "tool_name": obj.tool_name,
        "tool_version": obj.tool_version,
        "agent_id": _id(obj.agent_id),
        "principal": obj.principal_name,
        "role_id": obj.role_id,
        "roles_used": obj.roles_used,
        "status": obj.status,
        "reason_code": obj.reason_code,
        "input_data": obj.input_data,
        "output_data": obj.output_data,
        "output_truncated": obj.output_truncated,
        "error_type": obj.error_type,
        "error_message": obj.error_message,
        "upstream_status": obj.upstream_status,
        "guard_decisions": obj.guard_decisions,
        "guard_notes": guard_notes(obj),
        "attempts": obj.attempts,
        "execution_time_ms": obj.execution_time_ms,
        "chars_in": obj.chars_in,
        "chars_out": obj.chars_out,
        "cost": None if cost is None else f"{Decimal(cost).quantize(COST_SCALE):f}",
        "input_hash": obj.input_hash,
        "cached_from": _id(obj.cached_from_id),
        "request_id": obj.request_id,
        "entry_point": obj.entry_point,
        "client_name": obj.client_name,
        "client_version": obj.client_version,
        "protocol_version": obj.protocol_version,
        "oauth_client_id": obj.oauth_client_id,
        "oauth_client_name": obj.oauth_client_name,
        "upstream_connection_id": obj.upstream_connection_id,
        "trace_id": obj.trace_id,
        "created_at": _when(obj.created_at),
        "started_at": _when(obj.started_at),
        "finished_at": _when(obj.finished_at),
        "links": _links(obj, request),
    }


# (name, kind) in declaration order: "char" (no null), "char_null", "json" (null allowed
# where declared so); wait's JSON may not be null.
_REQUEST_FIELDS = [
    ("tool_id", "char"),
    ("tool", "char"),
    ("input_data", "json"),
    ("arguments", "json"),
    ("wait", "json_no_null"),
    ("role_id", "char_null"),
    ("role", "char_null"),
    ("agent_id", "char_null"),
]


def _char(value) -> str:
    """What DRF's CharField (trimmed, no blank) makes of a value."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise serializers.ValidationError("Not a valid string.", code="invalid")
    text = str(value).strip()
    if text == "":
        raise serializers.ValidationError("This field may not be blank.", code="blank")
    errors: list = []
    for validator in _TEXT_VALIDATORS:  # the ones CharField adds, reported as it does
        try:
            validator(text)
        except serializers.ValidationError as exc:
            errors.extend(exc.detail)
        except DjangoValidationError as exc:
            errors.extend(get_error_detail(exc))
    if errors:
        raise serializers.ValidationError(errors)
    return text


_TEXT_VALIDATORS = (ProhibitNullCharactersValidator(), ProhibitSurrogateCharactersValidator())


def _unknown_fields(names: list) -> dict:
    """The "Unknown field." errors, each name made encodable (U+FFFD for NUL characters
    and unpaired surrogates): an error body must never fail to render."""
    return {storable_text(str(name)): ["Unknown field."] for name in names}


@extend_schema_field(
    {"anyOf": [{"type": "boolean"}, {"type": "number", "minimum": 0, "maximum": 3600}]}
)
class WaitField(serializers.JSONField):
    """``wait``: true or false, or a number of seconds (``validate_wait`` reads it)."""


class ExecutionRequestSerializer(serializers.Serializer):
    # What ``validate`` and ``to_internal_value`` enforce, for the OpenAPI document.
    refuses_unknown_fields = True
    exclusive_fields = (("tool_id", "tool"), ("input_data", "arguments"), ("role_id", "role"))
    one_of_required = ("tool_id", "tool")

    tool_id = serializers.CharField(required=False, help_text="The tool's UUID (or give `tool`).")
    tool = serializers.CharField(
        required=False,
        help_text="The tool's name, or the name registry/me listed it under (or give `tool_id`).",
    )
    input_data = serializers.JSONField(
        required=False,
        default=dict,
        allow_null=True,
        help_text="Arguments: a JSON object, or the JSON text an LLM produced.",
    )
    arguments = serializers.JSONField(
        required=False, allow_null=True, help_text="Alias of input_data."
    )
    wait = WaitField(
        required=False,
        default=False,
        help_text="true to wait up to the tool's timeout, or a number of seconds.",
    )
    role_id = serializers.CharField(
        required=False, allow_null=True, help_text="Act with only this role (id or name)."
    )
    role = serializers.CharField(required=False, allow_null=True)
    agent_id = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="Ignored: the agent is whoever the token belongs to.",
    )

    def validate_wait(self, value):
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, int | float) and 0 <= value <= 3600:
            return float(value)
        raise serializers.ValidationError("Use true, false or a number of seconds (0 to 3600).")

    def validate(self, attrs):
        if not attrs.get("tool_id") and not attrs.get("tool"):
            raise serializers.ValidationError({"tool_id": ["Give tool_id or tool."]})
        if attrs.get("tool_id") and attrs.get("tool"):
            raise serializers.ValidationError({"tool": ["Give tool_id or tool, not both."]})
        given = self.initial_data if isinstance(self.initial_data, Mapping) else {}
        if "arguments" in given and "input_data" in given:
            raise serializers.ValidationError(
                {"arguments": ["Give input_data or arguments (its alias), not both."]}
            )
        if attrs.get("role_id") and attrs.get("role"):
            raise serializers.ValidationError({"role": ["Give role_id or role, not both."]})
        if "arguments" in attrs:
            attrs["input_data"] = attrs.pop("arguments")
        return attrs

    def to_internal_value(self, data):
        # Every governed call passes here: the fields are checked directly, as
        # the declared ones would check them, without DRF deep-copying eight
        # field objects per request (tests/executions/test_serializers.py holds
        # both ways equal).
        if not isinstance(data, Mapping):
            return self.generic_to_internal_value(data)
        unknown = sorted(set(data) - set(self._declared_fields))
        if unknown:
            raise serializers.ValidationError(_unknown_fields(unknown))
        values: dict[str, Any] = {}
        errors: dict[str, list] = {}
        for name, kind in _REQUEST_FIELDS:
            if name not in data:
                if name == "input_data":
                    values[name] = {}
                elif name == "wait":
                    values[name] = False
                continue
            value = data[name]
            try:
                if value is None and kind not in ("json", "char_null"):
                    raise serializers.ValidationError("This field may not be null.", code="null")
                if kind.startswith("char") and value is not None:
                    value = _char(value)
                if name == "wait":
                    value = self.validate_wait(value)
            except serializers.ValidationError as exc:
                errors[name] = exc.detail
            else:
                values[name] = value
        if errors:
            raise serializers.ValidationError(errors)
        return values

    def run_validators(self, value):
        # No serializer-level validators are declared; DRF would still build every
        # field to collect read-only defaults first.
        if self.validators:
            super().run_validators(value)

    def generic_to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(_unknown_fields(unknown))
        return super().to_internal_value(data)
