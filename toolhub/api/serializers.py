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


class AnyJSONField(serializers.JSONField):
    """Any JSON value, ``null`` included."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)
