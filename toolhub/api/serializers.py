"""Shared serializer building blocks."""

from __future__ import annotations

from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know: a misspelt field is an error, not a silent no-op."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: ["Unknown field."] for key in unknown}, code="unknown_field"
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


class AnyJSONField(serializers.JSONField):
    """Any JSON value, ``null`` included."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)
