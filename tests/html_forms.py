"""The forms of an HTML page, as a test drives them over HTTP: each form's id, action and
fields (inputs by name, with their values)."""

from __future__ import annotations

from html.parser import HTMLParser

import httpx


class _Forms(HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._open = {"id": attrs.get("id"), "action": attrs.get("action") or "", "fields": {}}
            self.forms.append(self._open)
        elif tag == "input" and self._open is not None and attrs.get("name"):
            self._open["fields"][attrs["name"]] = attrs.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._open = None


def forms_of(response: httpx.Response) -> list[dict]:
    parser = _Forms()
    parser.feed(response.text)
    return parser.forms


def form_of(response: httpx.Response, form_id: str) -> dict:
    found = [f for f in forms_of(response) if f["id"] == form_id]
    assert found, f"no form #{form_id} on {response.url}: {response.text[:500]}"
    return found[0]
