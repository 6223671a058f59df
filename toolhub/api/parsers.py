"""A JSON parser that enforces the request size limit.

Django checks ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only for ``request.body`` and
form data; DRF's parsers read the stream directly, so without this a client
could post an unbounded JSON body.
"""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from toolhub.api.exceptions import PayloadTooLarge


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"Request body is larger than {limit} bytes.")
        if not raw:
            return {}
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.loads(raw.decode(encoding))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error: {exc}") from exc
