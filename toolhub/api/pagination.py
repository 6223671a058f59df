"""Page-number pagination with a bounded ``page_size``."""

from __future__ import annotations

from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

MAX_PAGE_SIZE = 200


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            raise ValidationError({"page_size": ["Must be an integer."]}) from None
        if not 1 <= size <= self.max_page_size:
            raise ValidationError({"page_size": [f"Must be between 1 and {self.max_page_size}."]})
        return size

    def paginate_queryset(self, queryset, request, view=None):
        raw = request.query_params.get(self.page_query_param, "1")
        if not raw.isdecimal() or int(raw) < 1:
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
        return {
            "type": "object",
            "required": ["count", "results"],
            "properties": {
                "count": {"type": "integer"},
                "page": {"type": "integer"},
                "page_size": {"type": "integer"},
                "total_pages": {"type": "integer"},
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }
