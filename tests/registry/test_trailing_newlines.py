"""A name is refused when it ends with a newline: Python's ``$`` matches before a
trailing newline, so every name pattern is matched whole (``fullmatch``)."""

from __future__ import annotations

import pytest

from executions.executors.http import CONFIGS as HTTP_CONFIGS
from registry.importers.run import import_content
from registry.models import Tool


def test_an_http_header_name_with_a_trailing_newline_is_refused():
    assert HTTP_CONFIGS.problem("headers", {"X-Plain": "v"}) is None
    assert "not a valid header name" in HTTP_CONFIGS.problem("headers", {"X-Plain\n": "v"})
    problem = HTTP_CONFIGS.problem("headers_input_map", {"q": "X-Query\n"})
    assert "not a valid header name" in problem


@pytest.mark.django_db
@pytest.mark.parametrize(
    "entry",
    [
        '{"name": "newline_tool\\n", "type": "http"}',
        '{"name": "param_tool", "type": "http", "input_schema": '
        '{"type": "object", "properties": {"q\\n": {"type": "string"}}}}',
        '{"name": "config_tool", "type": "http", "configs": {"method\\n": "GET"}}',
    ],
)
def test_an_imported_name_with_a_trailing_newline_is_refused(entry):
    report = import_content('{"tools": [' + entry + "]}", actor=None)
    assert not report.ok, report.text()
    assert not Tool.objects.exists()
