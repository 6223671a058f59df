"""The OpenAPI document's own view: YAML by default, JSON for ``?format=json``."""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class FormatQueryNegotiation(DefaultContentNegotiation):
    """``?format=`` names the renderer (the API's own views turn that off); it wins over Accept.

    An unknown format is a 404, as DRF answers for a format it has no renderer for.
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        fmt = format_suffix or request.query_params.get("format")
        if not fmt:
            return super().select_renderer(request, renderers, format_suffix)
        renderers = self.filter_renderers(renderers, fmt)
        try:  # Accept still picks among this format's media types
            return super().select_renderer(request, renderers, fmt)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class SchemaView(SpectacularAPIView):
    """The OpenAPI document: YAML by default, JSON for ``?format=json`` or ``Accept: application/json``."""

    content_negotiation_class = FormatQueryNegotiation
