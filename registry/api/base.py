"""The base view every API endpoint uses: authentication, query-parameter checks and
the restricting tool queryset (the registry decides what a caller may see)."""

from __future__ import annotations

from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from registry import authorization
from registry.models import Action, Tool
from toolhub.api.pagination import PageNumberPagination
from toolhub.api.params import reject_unknown
from toolhub.exceptions import NotFound, PermissionDenied


class BaseAPIView(APIView):
    """Authenticated callers only; tools are always seen through ``authorization.restrict``.

    Subclasses never query ``Tool.objects`` directly for what they return:
    ``tool_queryset()`` is the caller's readable catalog, so no list, count,
    filter, search or error message can reveal a tool the caller may not read.
    """

    permission_classes = [IsAuthenticated]
    # The query parameters the view reads (paging aside, on GET): any other is a 400, as
    # is a repeated one, so a misspelled filter never reads as "everything matches".
    # None: the view's GET checks its own filters; its other methods take none.
    known_query_params: tuple[str, ...] | None = ()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not self._serves(request.method):
            return  # dispatch answers 405 (with Allow), whatever the query string says
        reading = request.method in ("GET", "HEAD")
        if self.known_query_params is not None:
            reject_unknown(request.query_params, self.known_query_params, paging=reading)
        elif not reading:
            reject_unknown(request.query_params, (), paging=False)

    def _serves(self, method: str) -> bool:
        name = method.lower()
        return name in self.http_method_names and hasattr(self, name)

    def tool_queryset(self, action: str = Action.READ):
        return authorization.restrict(Tool.objects.all(), self.request.user, action)

    def get_tool(self, tool_id, *, action: str = Action.READ) -> Tool:
        """The tool if the caller may read it (404 otherwise), then ``action`` checked (403)."""
        tool = self.tool_queryset().filter(pk=tool_id).first()
        if tool is None:
            raise NotFound("Tool not found.", code="tool_not_found")
        if action != Action.READ and not authorization.can(self.request.user, action, tool):
            raise PermissionDenied(f"You may not {action} this tool.", code="permission_denied")
        return tool

    def optional_tool(self, tool_id) -> Tool | None:
        """For a row that is for one tool or for all tools: the tool (404 when the caller
        may not read it), or None for all tools."""
        return self.get_tool(tool_id) if tool_id else None

    def visible_or_404(self, row, message: str, code: str):
        """``row`` (tied to one tool or to all tools) if it exists and the caller may read
        its tool; a 404 with ``message`` otherwise, as for a row that does not exist."""
        if row is None or (
            row.tool_id and not self.tool_queryset().filter(pk=row.tool_id).exists()
        ):
            raise NotFound(message, code=code)
        return row

    def paginate(self, queryset, serializer_class, **serializer_kwargs):
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        data = serializer_class(page, many=True, **serializer_kwargs).data
        return paginator.get_paginated_response(data)
