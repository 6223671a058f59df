"""Lists served a page at a time: ``paginated(Item)`` is the 200 body, ``page_parameters()``
the query parameters the paginator reads; the envelope is the paginator's own
``get_paginated_response_schema``."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ComponentIdentity, ResolvedComponent, build_array_type
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from toolhub.api.pagination import CursorPagination, PageNumberPagination
from toolhub.api.params import MAX_DB_INTEGER


class PaginatedList(serializers.ListSerializer):
    """Stands for one page of ``child`` as ``pagination_class`` answers it (schema only).

    A list serializer, so that the operation still reads as a list (its
    ``operationId`` ends in ``_list``); ``PaginatedListExtension`` maps it.
    """

    def __init__(self, *, pagination_class, **kwargs):
        super().__init__(**kwargs)
        self.pagination_class = pagination_class

    def to_representation(self, data):
        raise NotImplementedError("PaginatedList only describes a page in the OpenAPI document.")


class PaginatedListExtension(OpenApiSerializerExtension):
    target_class = PaginatedList

    def map_serializer(self, auto_schema, direction):
        item = auto_schema.resolve_serializer(self.target.child, direction)
        pagination_class = self.target.pagination_class
        prefix = "Cursor" if issubclass(pagination_class, CursorPagination) else ""
        component = ResolvedComponent(
            name=f"{prefix}Paginated{item.name}List",
            type=ResolvedComponent.SCHEMA,
            schema=pagination_class().get_paginated_response_schema(build_array_type(item.ref)),
            object=ComponentIdentity((type(self.target.child), pagination_class)),
        )
        auto_schema.registry.register_on_missing(component)
        return component.ref


def paginated(item, pagination_class=PageNumberPagination) -> PaginatedList:
    """The 200 body of a list of ``item`` served one page at a time by ``pagination_class``."""
    child = item() if isinstance(item, type) else item
    return PaginatedList(child=child, pagination_class=pagination_class)


def page_parameters(pagination_class=PageNumberPagination) -> list[OpenApiParameter]:
    """The query parameters ``pagination_class`` reads."""
    size = OpenApiParameter(
        pagination_class.page_size_query_param,
        {"type": "integer", "minimum": 1, "maximum": pagination_class.max_page_size},
        description=(
            f"Items per page, 1 to {pagination_class.max_page_size} "
            f"(default {pagination_class.page_size})."
        ),
    )
    if issubclass(pagination_class, CursorPagination):
        where = OpenApiParameter(
            pagination_class.cursor_query_param,
            {"type": "string", "pattern": "^[^\\u0000]*$"},
            description=(
                "Opaque: the `next` or `previous` link's cursor. Leave out (or empty) "
                "for the first page."
            ),
        )
    else:
        where = OpenApiParameter(
            pagination_class.page_query_param,
            {"type": "integer", "minimum": 1, "maximum": MAX_DB_INTEGER},
            description="Page number, from 1.",
        )
    return [where, size]
