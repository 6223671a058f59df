"""Shared serializer building blocks."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know: a misspelt field is an error, not a silent no-op."""

    refuses_unknown_fields = True  # the OpenAPI document says so (additionalProperties: false)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: ["Unknown field."] for key in unknown}, code="unknown_field"
                )
            wrong = [n for n in sorted(data) if _wrong_json_type(self.fields[n], data[n])]
            if wrong:
                raise serializers.ValidationError(
                    {name: [_type_error(self.fields[name])] for name in wrong},
                    code="invalid",
                )
        return super().to_internal_value(data)


def any_case_choice(value: object, choices) -> object:
    """``value`` as the one of ``choices`` it names in any letter case (``HTTP`` -> ``http``);
    anything else unchanged, for the caller's own check to refuse."""
    if isinstance(value, str):
        for choice in choices:
            if value.casefold() == str(choice).casefold():
                return choice
    return value


class AnyCaseChoiceField(serializers.ChoiceField):
    """A choice the way other clients spell it too: in any letter case, stored as declared."""

    def to_internal_value(self, data):
        return super().to_internal_value(any_case_choice(data, self.choices))


_TYPE_ERRORS = {
    serializers.BooleanField: "Must be true or false.",
    serializers.IntegerField: "Must be a number, not a string.",
}


def _type_error(field) -> str:
    for kind, message in _TYPE_ERRORS.items():
        if isinstance(field, kind):
            return message
    return "Not a valid string."


def _wrong_json_type(field, value) -> bool:
    """Whether ``value`` is not of the JSON type ``field`` is documented to take.

    DRF would read ``0`` as ``"0"`` for a text, UUID or choice field (and an
    integer as a UUID), ``"yes"`` as true and ``"7"`` as 7: what the document
    calls a string, a boolean or an integer must be one.
    """
    if value is None or field.read_only:
        return False
    if isinstance(field, serializers.BooleanField):
        return not isinstance(value, bool)
    if isinstance(field, serializers.IntegerField):
        return isinstance(value, str)
    if isinstance(value, str) or isinstance(field, serializers.MultipleChoiceField):
        return False
    if isinstance(field, serializers.ChoiceField):
        return all(isinstance(key, str) for key in field.choices)
    return isinstance(field, serializers.CharField | serializers.UUIDField)


class AnyJSONField(serializers.JSONField):
    """Any JSON value, ``null`` included."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    """A JSON object (documented as one)."""

    default_error_messages = {"not_an_object": "Must be a JSON object."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            self.fail("not_an_object")
        return value
