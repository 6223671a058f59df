"""The API's JSON renderer: DRF's, except that an answer never fails to encode.

A client can send text UTF-8 cannot encode (an unpaired surrogate, written as a
``\\ud800`` escape in its JSON), and an error may quote it back: an unknown
field's name, say. DRF's renderer then raises ``UnicodeEncodeError`` and the
client gets a 500 instead of its 400. Here such text is answered with U+FFFD in
place of each unpaired surrogate.
"""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import JSONRenderer


def _mend_text(text: str) -> str:
    # A str holds no surrogate pairs (those are single code points): every surrogate is unpaired.
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _mended(value: Any) -> Any:
    """``value`` with every string (and string key) mended; iterative, so any depth.

    Only called on data ``json.dumps`` has already encoded, so it holds no cycle.
    """
    if isinstance(value, str):
        return _mend_text(value)
    if not isinstance(value, dict | list | tuple):
        return value
    root: dict | list = {} if isinstance(value, dict) else []
    stack = [(iter(value.items()) if isinstance(value, dict) else iter(value), root)]
    while stack:
        entries, copy = stack[-1]
        try:
            entry = next(entries)
        except StopIteration:
            stack.pop()
            continue
        key, item = entry if isinstance(copy, dict) else (None, entry)
        if isinstance(item, str):
            item = _mend_text(item)
        elif isinstance(item, dict | list | tuple):
            child: dict | list = {} if isinstance(item, dict) else []
            stack.append((iter(item.items()) if isinstance(item, dict) else iter(item), child))
            item = child
        if isinstance(copy, dict):
            copy[_mend_text(key) if isinstance(key, str) else key] = item
        else:
            copy.append(item)
    return root


class EncodableJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return super().render(_mended(data), accepted_media_type, renderer_context)
