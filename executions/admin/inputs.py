"""A call's arguments as the admin shows them: what the caller sent apart from the
defaults the tool's schema filled in (``Execution.input_defaults``)."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.utils.html import format_html

from registry.admin.audit import pretty_json


def sent_and_defaults(input_data: Any, paths: list[str]) -> tuple[Any, dict[str, Any]]:
    """``input_data`` without the paths the defaults filled in, and those paths' values."""
    if not isinstance(input_data, dict) or not paths:
        return input_data, {}
    sent, applied = copy.deepcopy(input_data), {}
    for path in paths:
        *parents, name = path.split(".")
        node = sent
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and name in node:
            applied[path] = node.pop(name)
    return sent, applied


def arguments_html(execution) -> str:
    """The arguments, with the defaults applied shown apart from what was sent."""
    sent, applied = sent_and_defaults(execution.input_data, execution.input_defaults or [])
    if not applied:
        return pretty_json(sent)
    return format_html(
        '<div class="arguments-sent"><strong>Sent by the caller</strong>{}</div>'
        '<div class="arguments-defaults"><strong>Filled in from the tool\'s defaults '
        "(not sent)</strong>{}</div>",
        pretty_json(sent),
        pretty_json(applied),
    )


def arguments_text(execution) -> tuple[str, str]:
    """(sent, defaults applied) as indented JSON text ("" when no default applied)."""
    sent, applied = sent_and_defaults(execution.input_data, execution.input_defaults or [])
    text = json.dumps(sent, indent=2, sort_keys=True)
    return text, json.dumps(applied, indent=2, sort_keys=True) if applied else ""
