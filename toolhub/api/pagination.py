"""Page-number and cursor pagination with a bounded ``page_size`` and 400s for bad input."""

from __future__ import annotations

from base64 import b64decode
from datetime import datetime

from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from toolhub.api.params import db_integer_in_range, parse_id, utc_in_range

MAX_PAGE_SIZE = 200


def query_page_size(request, name: str, default: int, maximum: int) -> int:
    """``page_size`` from the query string: ASCII digits, from 1 to ``maximum``."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    size = parse_id(raw)
    if size is None or size > maximum:
        raise ValidationError({name: [f"Must be a whole number between 1 and {maximum}."]})
    return size


def _link(which: str, null_on: str) -> dict:
    """The OpenAPI schema of a page's ``next`` or ``previous`` link."""
    return {
        "type": "string",
        "format": "uri",
        "nullable": True,
        "description": f"The URL of the {which} page; null on the {null_on} page.",
    }


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        return query_page_size(
            request, self.page_size_query_param, self.page_size, self.max_page_size
        )

    def paginate_queryset(self, queryset, request, view=None):
        if "cursor" in request.query_params:
            raise ValidationError(
                {"cursor": ["This list is paged by number: use page=N (and page_size)."]}
            )
        raw = request.query_params.get(self.page_query_param, "1")
        if parse_id(raw) is None:
            raise ValidationError({"page": ["Must be a positive integer."]})
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        return Response(
            {
                "count": self.page.paginator.count,
                "page": self.page.number,
                "page_size": self.page.paginator.per_page,
                "total_pages": self.page.paginator.num_pages,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema):
        properties = {
            "count": {"type": "integer", "description": "Items on all pages."},
            "page": {"type": "integer", "description": "This page's number, from 1."},
            "page_size": {"type": "integer"},
            "total_pages": {"type": "integer"},
            "next": _link("next", "last"),
            "previous": _link("previous", "first"),
            "results": schema,
        }
        return {"type": "object", "required": list(properties), "properties": properties}


class CursorPagination(pagination.CursorPagination):
    """Cursor pages whose bad cursors are a 400 naming ``cursor``, never a 404 or a 500.

    A cursor is bad when it does not decode, or when its position is not a
    value of the first ordering field that the database can compare with
    (DRF would pass it to the query as it is).
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    invalid_cursor_message = (
        "Invalid cursor: use the next or previous link of a page, unchanged, "
        "or leave the cursor out for the first page."
    )

    def get_page_size(self, request):
        return query_page_size(
            request, self.page_size_query_param, self.page_size, self.max_page_size
        )

    def get_paginated_response_schema(self, schema):
        properties = {
            "next": _link("next", "last"),
            "previous": _link("previous", "first"),
            "results": schema,
        }
        return {"type": "object", "required": list(properties), "properties": properties}

    def paginate_queryset(self, queryset, request, view=None):
        if "page" in request.query_params:
            # Ignored, a page-number loop would get the first page forever.
            raise ValidationError(
                {
                    "page": [
                        "This list is paged by cursor: follow the page's next link "
                        "(or leave cursor out for the first page)."
                    ]
                }
            )
        self._model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        try:
            # DRF's decoding skips characters outside base64: "%%%" would read as no cursor.
            b64decode(request.query_params.get(self.cursor_query_param, ""), validate=True)
            cursor = super().decode_cursor(request)
        except (ValueError, NotFound):  # binascii.Error and UnicodeEncodeError are ValueErrors
            cursor = None
            valid = False
        else:
            valid = cursor is None or cursor.position is None or self.valid_position(cursor)
        if not valid:
            raise ValidationError({self.cursor_query_param: [self.invalid_cursor_message]})
        return cursor

    def valid_position(self, cursor) -> bool:
        """Whether the cursor's position is a value the ordering field's filter can use."""
        try:
            field = self._model._meta.get_field(self.ordering[0].lstrip("-"))
        except (AttributeError, FieldDoesNotExist):  # not a model field: nothing to check
            return True
        try:
            value = field.to_python(cursor.position)
        except DjangoValidationError:
            return False
        if isinstance(value, datetime):
            # Positions handed out carry their offset; a naive one was never issued.
            return timezone.is_aware(value) and utc_in_range(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return db_integer_in_range(value)
        if isinstance(value, str):
            return "\x00" not in value  # PostgreSQL refuses NUL in text
        return True
