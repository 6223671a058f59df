"""What the published OpenAPI document says about request bodies as a whole.

drf-spectacular marks a body required only when its serializer has a required
field. A body whose fields are each optional but of which one must be given
(``one_of_required``: ``tool_id`` or ``tool``) refuses an empty body just the
same: ``document_request_bodies`` (a postprocessing hook) marks it required, so
the document never offers "no body" as a valid request the API then refuses.
"""

from __future__ import annotations

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
