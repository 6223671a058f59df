"""What a request may send, as the API reads it.

- Choices in any letter case (``AnyCaseChoiceField``: ``HTTP`` as well as ``http``).
- Query parameters: ``DATE_OR_DATETIME`` for a view to declare; ``document_parameters``
  (a postprocessing hook) bounds every id and refuses empty or NUL-bearing text.
- Request bodies: closed to unknown fields, at most one of ``exclusive_fields``, at
  least one of ``one_of_required``, and a JSON field that refuses null documented so.
  drf-spectacular marks a body required only when its serializer has a required
  field; a body whose fields are each optional but of which one must be given
  (``one_of_required``: ``tool_id`` or ``tool``) refuses an empty body just the same:
  ``document_request_bodies`` (a postprocessing hook) marks it required, so the
  document never offers "no body" as a valid request the API then refuses.

The two serializer extensions here are registered by ``ToolhubConfig.ready``: no view
imports this module, and an extension counts only once imported.
"""

from __future__ import annotations

import re
from copy import deepcopy

from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from rest_framework import serializers

from toolhub.api.params import MAX_DB_INTEGER
from toolhub.api.serializers import AnyCaseChoiceField

# Choices in any letter case


def any_case_pattern(choices) -> str:
    """A pattern (ECMA-262, no flags) matching each of ``choices`` in any letter case."""
    words = []
    for choice in choices:
        letters = []
        for char in str(choice):
            pair = {char.lower(), char.upper()}
            letters.append(f"[{''.join(sorted(pair))}]" if len(pair) > 1 else re.escape(char))
        words.append("".join(letters))
    return f"^(?:{'|'.join(words)})$"


class AnyCaseChoiceFieldExtension(OpenApiSerializerFieldExtension):
    """The declared choices, and the same words in any letter case (``HTTP``)."""

    target_class = AnyCaseChoiceField

    def map_serializer_field(self, auto_schema, direction):
        choices = list(self.target.choices)
        return {
            "anyOf": [
                {"type": "string", "enum": choices},
                {"type": "string", "pattern": any_case_pattern(choices)},
            ],
            "description": f"One of {', '.join(choices)}, in any letter case (stored as listed).",
        }


# Query parameters

# A query parameter read by ``query_datetime(..., allow_date=True)``.
DATE_OR_DATETIME = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]
}
# Any query parameter: RequestShapeMiddleware refuses NUL characters, reject_unknown empty values.
QUERY_TEXT = {"minLength": 1, "pattern": "^[^\\u0000]*$"}

ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_DB_INTEGER}


def document_parameters(result, generator, request, public):
    """Postprocessing hook: integer ids are read as ``parse_id`` reads them (1 to the
    largest bigint), so the document does not offer ``0`` or ``-1`` as valid ids."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                name = parameter["name"]
                if parameter["in"] == "query" and schema.get("type") == "string":
                    if not {"enum", "format", "pattern"} & set(schema):
                        for key, value in QUERY_TEXT.items():
                            schema.setdefault(key, value)
                if schema.get("type") == "integer" and (name == "id" or name.endswith("_id")):
                    for key, value in ID_SCHEMA.items():
                        schema.setdefault(key, value)
    return result


# Request bodies

# Any JSON value but null, in OpenAPI 3.0 (which has no null type).
NOT_NULL = {"anyOf": [{"type": t} for t in ("object", "array", "string", "number", "boolean")]}


def _not_null_json(serializer, schema: dict) -> None:
    """A JSON field that refuses null is documented as any value but null (drf-spectacular
    would say any value, null included)."""
    for name, field in serializer.fields.items():
        documented = schema.get("properties", {}).get(name)
        if (
            isinstance(field, serializers.JSONField)
            and not field.allow_null
            and documented is not None
            and not {"type", "$ref", "anyOf", "oneOf", "allOf"} & set(documented)
        ):
            documented.update(deepcopy(NOT_NULL))


def _not_both(schema: dict, pair) -> dict:
    """At most one of ``pair`` given: a null stands for "not given" where the field allows it."""
    given = {}
    for name in pair:
        field = schema.get("properties", {}).get(name, {})
        if field.get("nullable") and field.get("type"):
            given[name] = {"type": field["type"]}
    rule = {"required": list(pair)}
    if given:
        rule["properties"] = given
    return {"not": rule}


class ClosedSerializerExtension(OpenApiSerializerExtension):
    """Request bodies as the serializer reads them: closed to unknown fields
    (``refuses_unknown_fields``) and with ``exclusive_fields`` (pairs of which at most
    one may be given) and ``one_of_required`` (of which at least one must be)."""

    target_class = serializers.Serializer
    match_subclasses = True

    @classmethod
    def _matches(cls, target) -> bool:
        return super()._matches(target) and any(
            getattr(target, name, None)
            for name in ("refuses_unknown_fields", "exclusive_fields", "one_of_required")
        )

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction != "request":
            return schema
        if getattr(self.target, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        _not_null_json(self.target, schema)
        rules = [_not_both(schema, pair) for pair in getattr(self.target, "exclusive_fields", ())]
        required = getattr(self.target, "one_of_required", ())
        if required:
            rules.append({"anyOf": [{"required": [name]} for name in required]})
        if rules:
            schema["allOf"] = rules
        return schema


_REF_PREFIX = "#/components/schemas/"


def refuses_empty(schema: dict) -> bool:
    """Whether an empty object breaks ``schema``: a required field, or an ``allOf`` rule
    whose every alternative requires one."""
    if schema.get("required"):
        return True
    for rule in schema.get("allOf", []):
        branches = rule.get("anyOf", [])
        if branches and all(branch.get("required") for branch in branches):
            return True
    return False


def document_request_bodies(result, generator, request, public):
    """Postprocessing hook: a request body that must name something is required."""
    schemas = result.get("components", {}).get("schemas", {})
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            body = operation.get("requestBody")
            if not body or body.get("required"):
                continue
            for media in body.get("content", {}).values():
                ref = media.get("schema", {}).get("$ref", "")
                component = schemas.get(ref.removeprefix(_REF_PREFIX)) if ref else None
                if component is not None and refuses_empty(component):
                    body["required"] = True
    return result
