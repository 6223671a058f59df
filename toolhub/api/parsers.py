"""A JSON parser that enforces the request size limit and keeps to JSON proper.

Django checks ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only for ``request.body`` and
form data; DRF's parsers read the stream directly, so without this a client
could post an unbounded JSON body.

Python's ``json`` module also reads what JSON does not allow, and what no
record can store: ``NaN``, ``Infinity``, ``-Infinity`` and number literals
beyond a float's range (``1e999`` becomes infinity). Those are refused (400), as
are bodies nested more than ``MAX_DEPTH`` levels deep: code further on need not
guard its recursion against a client's nesting.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ErrorDetail, ParseError, ValidationError
from rest_framework.parsers import JSONParser

from toolhub import strictjson
from toolhub import text as text_rules
from toolhub.api.exceptions import PayloadTooLarge

# The deepest nesting of arrays and objects a request body may have (the body
# itself is level 1). Above the depth call arguments may have
# (executions.jsonsafe.MAX_DEPTH), so those are refused by the call's rules.
MAX_DEPTH = 128


def _too_deep() -> ParseError:
    return ParseError(f"JSON parse error: the body is nested more than {MAX_DEPTH} levels deep.")


def _unencodable(path: str) -> ValidationError:
    """A 400 naming the field whose text holds an unpaired surrogate."""
    message = ErrorDetail(text_rules.MESSAGE, code=text_rules.CODE)
    return ValidationError({path: [message]} if path else [message])


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
            data = strictjson.loads(raw.decode(encoding))
        except RecursionError:
            raise _too_deep() from None
        except strictjson.UnencodableText as exc:
            raise _unencodable(exc.path) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error: {exc}") from exc
        # Fewer opening brackets than the limit cannot nest deeper: most bodies skip the walk.
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and strictjson.nested_deeper_than(
            data, MAX_DEPTH
        ):
            raise _too_deep()
        return data
