"""Syncing registered Python functions into the registry as python tools."""

from __future__ import annotations

from typing import Literal

import pytest
from django.core.management import call_command

from executions.python_sync import python_tools_sync
from executions.python_tools import ToolRegistry
from executions.python_tools import registry as default_registry
from registry.models import AuditEvent, Tool
from registry.services.catalog import tool_upsert

pytestmark = pytest.mark.django_db


def make_registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(category="text", version="2.1.0", speed="fast")
    def shout(text: str, times: int = 1, style: Literal["loud", "polite"] = "loud") -> str:
        """Repeat a text in capitals.

        Args:
            text: What to shout.
            times: How often.
        """
        return " ".join([text.upper()] * times)

    @tools.tool
    def maybe(limit: int | None = None, tags: list[str] | None = None) -> list:
        """Optional arguments that also accept None."""
        return []

    return tools


def test_sync_creates_python_tools():
    tools = make_registry()
    report = python_tools_sync(actor=None, registry=tools)
    assert sorted(report.created) == ["maybe", "shout"]

    shout = Tool.objects.get(name="shout")
    assert shout.type == "python"
    assert shout.version == "2.1.0"
    assert shout.description == "Repeat a text in capitals."
    assert shout.tool_metadata == {"category": "text", "speed": "fast", "source": "python"}
    assert {c.config_key: c.plain_value for c in shout.configs.all()} == {"function": "shout"}
    rows = {p.name: p for p in shout.parameters.order_by("position")}
    assert list(rows) == ["text", "times", "style"]
    assert rows["text"].required and rows["text"].description == "What to shout."
    assert rows["times"].default == 1 and not rows["times"].required
    assert rows["style"].json_schema == {"enum": ["loud", "polite"]}
    # The registry's schema and the tool's derived schema agree on what is valid.
    assert shout.input_schema()["properties"]["style"]["default"] == "loud"

    maybe = Tool.objects.get(name="maybe")
    rows = {p.name: p for p in maybe.parameters.all()}
    assert rows["limit"].type == "integer" and not rows["limit"].has_default  # None default dropped
    assert rows["tags"].type == "array" and rows["tags"].json_schema == {
        "items": {"type": "string"}
    }


def test_sync_is_idempotent_and_deactivates_unregistered_functions():
    tools = make_registry()
    python_tools_sync(actor=None, registry=tools)
    events = AuditEvent.objects.count()
    again = python_tools_sync(actor=None, registry=tools)
    assert again.created == again.updated == again.deactivated == []
    assert sorted(again.unchanged) == ["maybe", "shout"]
    assert AuditEvent.objects.count() == events

    tools.unregister("maybe")
    report = python_tools_sync(actor=None, registry=tools)
    assert report.deactivated == ["maybe"]
    maybe = Tool.objects.get(name="maybe")
    assert not maybe.is_active and maybe.tool_metadata["python_sync_state"] == "unregistered"

    tools = make_registry()  # the function is back
    report = python_tools_sync(actor=None, registry=tools)
    assert report.updated == ["maybe"]
    maybe.refresh_from_db()
    assert maybe.is_active and "python_sync_state" not in maybe.tool_metadata


def test_sync_skips_names_held_by_other_tool_types_and_checks_imported_functions():
    tool_upsert(actor=None, name="shout", type="http")
    imported = tool_upsert(
        actor=None, name="weather", type="python", configs={"function": "get_weather"}
    ).tool
    report = python_tools_sync(actor=None, registry=make_registry())
    assert report.skipped == [{"tool": "shout", "reason": "the name is taken by a http tool"}]
    assert Tool.objects.get(name="shout").type == "http"
    # A python tool whose function is not registered cannot run: deactivated.
    assert report.deactivated == ["weather"]
    imported.refresh_from_db()
    assert not imported.is_active


def test_sync_python_tools_command(capsys):
    call_command("sync_python_tools")
    out = capsys.readouterr().out
    assert "Python tools:" in out
    names = set(Tool.objects.filter(type="python").values_list("name", flat=True))
    assert names == set(default_registry.names())
    assert "calculator" in names
    call_command("sync_python_tools")
    assert f"{len(names)} unchanged" in capsys.readouterr().out


def test_an_operators_module_of_python_tools_is_loaded_and_synced():
    import sys

    from executions.apps import load_python_tool_modules

    try:
        load_python_tool_modules(["tests.data.sample_python_tools"])
        assert default_registry.get("sample_shout") is not None
        report = python_tools_sync(actor=None)
        assert "sample_shout" in report.created
        tool = Tool.objects.get(name="sample_shout")
        assert [p.name for p in tool.parameters.order_by("position")] == ["text", "times"]
    finally:
        default_registry.unregister("sample_shout")
        sys.modules.pop("tests.data.sample_python_tools", None)


def test_a_module_that_does_not_import_stops_the_process():
    from django.core.exceptions import ImproperlyConfigured

    from executions.apps import load_python_tool_modules

    with pytest.raises(ImproperlyConfigured, match=r"TOOLHUB_PYTHON_TOOL_MODULES.*no_such_mod"):
        load_python_tool_modules(["no_such_module_for_toolhub"])
