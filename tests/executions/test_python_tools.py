"""Python tools: the @tool decorator and schema derivation, PythonExecutor, the built-ins."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import math
import threading
import time
import uuid
from decimal import Decimal
from types import SimpleNamespace
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator

from executions.executors.base import ErrorType, ToolCall
from executions.executors.python import PythonExecutor
from executions.jsonsafe import json_safe
from executions.python_tools import registry as global_registry
from executions.python_tools import tool as global_tool
from executions.python_tools.builtins import evaluate_expression
from executions.python_tools.registry import (
    JSON_SCHEMA_DIALECT,
    ToolDefinitionError,
    ToolRegistry,
    build_tool,
    parse_docstring,
)
from registry.schema import schema_from_parameters
from tests.executions.boundary import run_at_the_boundary


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


def call(name: str, inputs: dict | None = None, *, timeout: float = 5, secrets=(), **configs):
    configs.setdefault("function", name)  # as the registry stores it for every Python tool
    return ToolCall(
        tool_name=name,
        tool_type="python",
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=timeout,
        secret_values=tuple(secrets),
    )


def props(entry) -> dict:
    return entry.input_schema["properties"]


# --------------------------------------------------------------------------- schema derivation


def test_scalar_hints_and_required(reg):
    @reg.tool
    def scalars(s: str, i: int, f: float, b: bool) -> None:
        """Scalars."""

    entry = reg.get("scalars")
    assert entry.input_schema == {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "f": {"type": "number"},
            "b": {"type": "boolean"},
        },
        "required": ["s", "i", "f", "b"],
        "additionalProperties": False,
    }
    Draft202012Validator.check_schema(entry.input_schema)


def test_container_hints(reg):
    @reg.tool
    def containers(
        names: list[str],
        scores: dict[str, float],
        matrix: list[list[int]],
        records: list[dict[str, Any]],
        tags: set[str],
        pair: tuple[int, str],
        many: tuple[int, ...],
        bare_list: list,
        bare_dict: dict,
    ) -> None:
        pass

    p = props(reg.get("containers"))
    assert p["names"] == {"type": "array", "items": {"type": "string"}}
    assert p["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["matrix"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}},
    }
    assert p["records"] == {"type": "array", "items": {"type": "object"}}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert p["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
    }
    assert p["many"] == {"type": "array", "items": {"type": "integer"}}
    assert p["bare_list"] == {"type": "array"}
    assert p["bare_dict"] == {"type": "object"}


def test_optional_hints(reg):
    @reg.tool
    def optionals(
        a: str | None,
        b: Optional[int] = None,  # noqa: UP045 - the typing spelling is under test
        c: list[str] | None = None,
        d: Literal["x", "y"] | None = None,
    ) -> None:
        pass

    entry = reg.get("optionals")
    p = props(entry)
    assert p["a"] == {"type": ["string", "null"]}
    assert p["b"] == {"type": ["integer", "null"], "default": None}
    assert p["c"] == {"type": ["array", "null"], "items": {"type": "string"}, "default": None}
    assert p["d"] == {"type": ["string", "null"], "enum": ["x", "y", None], "default": None}
    assert entry.input_schema["required"] == ["a"]
    validator = Draft202012Validator(entry.input_schema)
    assert validator.is_valid({"a": None, "d": None})
    assert not validator.is_valid({"a": None, "d": "z"})


def test_literal_enum_and_int_float_union(reg):
    @reg.tool
    def choices(
        mode: Literal["fast", "slow"],
        n: Literal[1, 2, 3],
        color: Color,
        level: Level = Level.LOW,
        amount: int | float = 1,
    ) -> None:
        pass

    p = props(reg.get("choices"))
    assert p["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert p["n"] == {"type": "integer", "enum": [1, 2, 3]}
    assert p["color"] == {"type": "string", "enum": ["red", "green"]}
    assert p["level"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert p["amount"] == {"type": "number", "default": 1}


def test_defaults_are_not_required(reg):
    @reg.tool
    def defaults(a: str, b: int = 3, c: bool = False, d: str = "x") -> None:
        pass

    entry = reg.get("defaults")
    assert entry.input_schema["required"] == ["a"]
    assert props(entry)["b"]["default"] == 3
    assert props(entry)["c"]["default"] is False


def test_no_parameters_and_no_required_key(reg):
    @reg.tool
    def nothing() -> str:
        """Nothing."""
        return "x"

    schema = reg.get("nothing").input_schema
    assert schema["properties"] == {}
    assert "required" not in schema


def test_annotated_description_and_any(reg):
    @reg.tool
    def annotated(x: Annotated[int, "how many"], y: Annotated[list[Any], "anything"]) -> None:
        pass

    p = props(reg.get("annotated"))
    assert p["x"] == {"type": "integer", "description": "how many"}
    assert p["y"] == {"type": "array", "description": "anything"}


@pytest.mark.parametrize(
    "source",
    [
        "def f(x: int | str): pass",
        "def f(x: Literal[1, 'a']): pass",
        "def f(x: dict[int, str]): pass",
        "def f(x: object): pass",
        "def f(x): pass",
        "def f(*args: int): pass",
        "def f(**kwargs: int): pass",
        "def f(x: int, /): pass",
        "def f(x: int):\n    yield x",
    ],
)
def test_unsupported_signatures_are_refused(reg, source):
    namespace: dict[str, Any] = {"Literal": Literal}
    exec(source, namespace)  # noqa: S102 - building test functions from literals
    with pytest.raises(ToolDefinitionError):
        reg.tool(namespace["f"])
    assert "f" not in reg


@pytest.mark.parametrize("name", ["", "has space", "dots.no", "x" * 65, "ünï"])
def test_invalid_names(reg, name):
    def f() -> None:
        pass

    with pytest.raises(ToolDefinitionError):
        reg.tool(name=name)(f)


def test_docstring_description_and_args():
    doc = """Look up the weather
    for a city.

    Longer explanation that is not part of the description.

    Args:
        city (str): The city name,
            e.g. "Paris".
        days: How many days
            ahead to forecast.
        units (str, optional): metric or imperial.

    Returns:
        days: not a parameter
    """
    summary, args = parse_docstring(doc)
    assert summary == "Look up the weather for a city."
    assert args == {
        "city": 'The city name, e.g. "Paris".',
        "days": "How many days ahead to forecast.",
        "units": "metric or imperial.",
    }


def test_docstring_without_args_and_none():
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Just one line.") == ("Just one line.", {})


def test_decorator_forms_metadata_and_parameters(reg):
    @reg.tool(name="weather-lookup", category="weather", version="2.1.0", safety="safe")
    def lookup(city: str, days: int = 1, units: Literal["metric", "imperial"] | None = None):
        """Look up the weather.

        Args:
            city: The city name.
            days: Days ahead.
            units: Unit system.
        """
        return {"city": city}

    entry = reg.get("weather-lookup")
    assert lookup(city="x") == {"city": "x"}  # the decorator returns the function itself
    assert lookup.__toolhub_tool__ is entry
    assert entry.name == "weather-lookup"
    assert entry.function is lookup
    assert entry.is_async is False
    assert entry.description == "Look up the weather."
    assert entry.metadata == {"version": "2.1.0", "category": "weather", "safety": "safe"}
    assert entry.version == "2.1.0"
    assert entry.category == "weather"
    assert props(entry)["city"]["description"] == "The city name."
    assert entry.parameters() == [
        {
            "name": "city",
            "type": "string",
            "required": True,
            "description": "The city name.",
            "json_schema": {},
        },
        {
            "name": "days",
            "type": "integer",
            "required": False,
            "description": "Days ahead.",
            "default": 1,
            "json_schema": {},
        },
        {
            "name": "units",
            "type": "string",
            "required": False,
            "description": "Unit system.",
            "default": None,
            "json_schema": {"enum": ["metric", "imperial"]},
            "nullable": True,
        },
    ]


def test_parameters_rebuild_the_same_schema_in_the_tool_registry(reg):
    @reg.tool(description="Explicit description wins.")
    def shaped(
        ids: list[int],
        weights: dict[str, float],
        color: Color = Color.RED,
        note: str = "",
    ) -> None:
        """Docstring summary.

        Args:
            ids: Identifiers.
        """

    entry = reg.get("shaped")
    assert entry.description == "Explicit description wins."
    rows = [
        SimpleNamespace(
            name=p["name"],
            type=p["type"],
            json_schema=p["json_schema"],
            description=p["description"],
            has_default="default" in p,
            default=p.get("default"),
            required=p["required"],
        )
        for p in entry.parameters()
    ]
    assert schema_from_parameters(rows) == entry.input_schema
    for p in entry.parameters():
        assert not {"type", "description", "default"} & set(p["json_schema"])


def test_bare_decorator_and_async_detection(reg):
    @reg.tool
    async def fetch_later(x: int) -> int:
        """Async tool."""
        return x

    assert reg.get("fetch_later").is_async is True
    assert reg.names() == ["fetch_later"]
    assert len(reg) == 1


def test_duplicate_names(reg):
    @reg.tool(name="dup")
    def one() -> None:
        pass

    def two() -> None:
        pass

    with pytest.raises(ToolDefinitionError, match="already registered"):
        reg.tool(name="dup")(two)
    reg.register(build_tool(one, name="dup"))  # the same function again: replaced, no error
    assert reg.unregister("dup") is not None
    assert "dup" not in reg


def test_global_decorator_registers_process_wide():
    @global_tool(name="test_global_echo_tool")
    def echo(text: str) -> str:
        return text

    try:
        assert global_registry.get("test_global_echo_tool").function is echo
        result = PythonExecutor().execute(call("test_global_echo_tool", {"text": "hi"}))
        assert result.ok
        assert result.output == "hi"
    finally:
        global_registry.unregister("test_global_echo_tool")


# --------------------------------------------------------------------------- executor


@pytest.fixture
def executor(reg) -> PythonExecutor:
    return PythonExecutor(registry=reg)


def test_sync_function(reg, executor):
    @reg.tool
    def add(a: int, b: int = 2) -> int:
        return a + b

    result = executor.execute(call("add", {"a": 40}))
    assert result.ok
    assert result.output == 42
    assert result.error_type is None
    assert result.metadata == {"function": "add", "is_async": False}
    assert result.latency_ms >= 0


def test_async_function(reg, executor):
    @reg.tool
    async def slow_add(a: int, b: int) -> dict:
        await asyncio.sleep(0.01)
        return {"sum": a + b}

    result = executor.execute(call("slow_add", {"a": 1, "b": 2}))
    assert result.ok, result.error_message
    assert result.output == {"sum": 3}


def test_async_function_called_from_a_running_loop(reg, executor):
    @reg.tool
    async def inner() -> str:
        await asyncio.sleep(0)
        return "done"

    async def caller():
        return executor.execute(call("inner"))

    result = asyncio.run(caller())
    assert result.ok
    assert result.output == "done"


def test_config_function_selects_the_registered_name(reg, executor):
    @reg.tool(name="real_name")
    def real() -> str:
        return "real"

    result = executor.execute(call("tool_row_name", function="real_name"))
    assert result.ok
    assert result.output == "real"


def test_a_tool_without_a_function_config_does_not_run_by_its_name(reg, executor):
    @reg.tool
    def calculator() -> str:
        return "ran by its name"

    result = executor.execute(
        ToolCall(
            tool_name="calculator", tool_type="python", configs={}, inputs={}, timeout_seconds=5
        )
    )
    assert not result.ok
    assert result.error_type == ErrorType.CONFIG
    assert "config 'function'" in result.error_message


def test_unknown_function_is_config_error(executor):
    result = executor.execute(call("os.system"))
    assert not result.ok
    assert result.error_type == ErrorType.CONFIG
    other = executor.execute(call("whatever", function="subprocess.run"))
    assert other.error_type == ErrorType.CONFIG


def test_exception_is_tool_error_with_type_and_redaction(reg, executor):
    @reg.tool
    def boom(token: str) -> None:
        raise RuntimeError(f"upstream refused token {token}")

    # The executor answers raw; the runner's one redaction removes the call's secrets.
    result = run_at_the_boundary(
        executor, call("boom", {"token": "sk-live-123456"}, secrets=["sk-live-123456"])
    )
    assert not result.ok
    assert result.error_type == ErrorType.TOOL
    assert result.error_message == "RuntimeError: upstream refused token [REDACTED]"
    assert result.retryable is False


def test_secret_values_are_redacted_from_output(reg, executor):
    @reg.tool
    def leak() -> dict:
        return {"key": "hunter2-secret", "list": ["hunter2-secret"]}

    result = run_at_the_boundary(executor, call("leak", secrets=["hunter2-secret"]))
    assert result.output == {"key": "[REDACTED]", "list": ["[REDACTED]"]}


def test_tool_raising_timeout_error_is_a_tool_error(reg, executor):
    @reg.tool
    def raises_timeout() -> None:
        raise TimeoutError("upstream socket timed out")

    result = executor.execute(call("raises_timeout"))
    assert result.error_type == ErrorType.TOOL
    assert result.error_message == "TimeoutError: upstream socket timed out"


def test_system_exit_is_contained(reg, executor):
    @reg.tool
    def quits() -> None:
        raise SystemExit(3)

    result = executor.execute(call("quits"))
    assert result.error_type == ErrorType.TOOL
    assert result.error_message.startswith("SystemExit")


def test_sync_timeout_abandons_the_thread(reg, executor):
    release = threading.Event()

    @reg.tool
    def sleepy() -> str:
        release.wait(10)
        return "late"

    started = time.monotonic()
    result = executor.execute(call("sleepy", timeout=0.3))
    elapsed = time.monotonic() - started
    release.set()
    assert result.error_type == ErrorType.TIMEOUT
    assert "abandoned" in result.error_message
    assert 0.25 <= elapsed < 3


def test_async_timeout_cancels_the_coroutine(reg, executor):
    cancelled = threading.Event()

    @reg.tool
    async def forever() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    result = executor.execute(call("forever", timeout=0.3))
    assert time.monotonic() - started < 3
    assert result.error_type == ErrorType.TIMEOUT
    assert cancelled.wait(2)


def test_invalid_inputs_are_input_errors(reg, executor):
    @reg.tool
    def typed(n: int, color: Color = Color.RED) -> str:
        return f"{n}-{color}"

    missing = executor.execute(call("typed"))
    assert missing.error_type == ErrorType.INPUT
    assert "'n' is a required property" in missing.error_message
    wrong = executor.execute(call("typed", {"n": "seven"}))
    assert wrong.error_type == ErrorType.INPUT
    extra = executor.execute(call("typed", {"n": 1, "surprise": True}))
    assert extra.error_type == ErrorType.INPUT
    bad_enum = executor.execute(call("typed", {"n": 1, "color": "blue"}))
    assert bad_enum.error_type == ErrorType.INPUT


def test_enum_inputs_arrive_as_members(reg, executor):
    seen = {}

    @reg.tool
    def paint(color: Color, level: Level | None = None) -> str:
        seen["color"], seen["level"] = color, level
        return color.value

    result = executor.execute(call("paint", {"color": "green", "level": 2}))
    assert result.ok, result.error_message
    assert seen == {"color": Color.GREEN, "level": Level.HIGH}
    assert result.output == "green"


def test_outputs_are_json_safe(reg, executor):
    @reg.tool
    def rich() -> dict:
        return {
            "price": Decimal("12.3400"),
            "when": dt.datetime(2024, 3, 1, 12, 30, tzinfo=dt.UTC),
            "day": dt.date(2024, 2, 29),
            "id": uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            "blob": b"\x00\xff",
            "span": dt.timedelta(minutes=1, seconds=30),
            "tags": {"b", "a"},
            "tuple": (1, 2),
            "color": Color.RED,
            3: "int key",
            "nan": math.nan,
            "other": object,
        }

    result = executor.execute(call("rich"))
    assert result.ok
    out = result.output
    assert out["price"] == "12.3400"
    assert out["when"] == "2024-03-01T12:30:00+00:00"
    assert out["day"] == "2024-02-29"
    assert out["id"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert out["blob"] == "AP8="
    assert out["span"] == 90.0
    assert out["tags"] == ["a", "b"]
    assert out["tuple"] == [1, 2]
    assert out["color"] == "red"
    assert out["3"] == "int key"
    assert out["nan"] == "nan"
    assert out["other"] == "<class 'object'>"


def test_json_safe_cycles_and_memoryview():
    loop: list[Any] = [1]
    loop.append(loop)
    assert json_safe(loop) == [1, "[circular]"]
    assert json_safe(memoryview(b"hi")) == "aGk="
    assert json_safe(dt.time(8, 15)) == "08:15:00"
    assert json_safe(Level.HIGH) == 2


def test_non_positive_timeout_is_config_error(reg, executor):
    @reg.tool
    def quick() -> int:
        return 1

    assert executor.execute(call("quick", timeout=0)).error_type == ErrorType.CONFIG


# --------------------------------------------------------------------------- built-ins


def test_builtins_are_registered_on_import():
    for name in ("calculator", "current_time", "unit_convert", "text_stats"):
        entry = global_registry.get(name)
        assert entry is not None, name
        assert entry.description
        Draft202012Validator.check_schema(entry.input_schema)
    assert global_registry.get("current_time").input_schema["properties"]["timezone"] == {
        "type": "string",
        "description": global_registry.get("current_time").parameters()[0]["description"],
        "default": "UTC",
    }


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("-3 + +4", 1),
        ("sqrt(16)", 4.0),
        ("abs(-2.5)", 2.5),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("floor(2.7) + ceil(2.1)", 5),
        ("log(e)", 1.0),
        ("log(8, 2)", 3.0),
        ("2 * pi", 2 * math.pi),
        ("1.5e3", 1500.0),
        ("10 ** 300 // 10 ** 299", 10),
    ],
)
def test_calculator_correctness(expression, expected):
    assert evaluate_expression(expression) == pytest.approx(expected)
    result = PythonExecutor().execute(call("calculator", {"expression": expression}))
    assert result.ok, result.error_message
    assert result.output["result"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os')", "only these functions"),
        ("__import__('os').system('true')", "only these functions"),
        ("(1).real", "attribute access"),
        ("x + 1", "unknown name"),
        ("os", "unknown name"),
        ("9**9**9", "exponent too large"),
        ("10 ** 5000", "exponent too large"),
        ("(10 ** 999) ** 999", "too large"),
        ("2 ** 1000 * 2 ** 1000 * 2 ** 1000 * 2 ** 1000 * 2 ** 1000", "too large"),
        ("lambda: 1", "Lambda"),
        ("[x for x in range(10)]", "ListComp"),
        ("(x for x in (1,))", "GeneratorExp"),
        ("open('/etc/passwd')", "only these functions"),
        ("'a' * 10", "only numbers"),
        ("[1, 2]", "List"),
        ("1 if 1 else 2", "IfExp"),
        ("True + 1", "only numbers"),
        ("1j * 2", "only numbers"),
        ("1 / 0", "division by zero"),
        ("sqrt(-1)", "domain"),
        ("(-8) ** 0.5", "not a real number"),
        ("exp(1000)", "too large"),
        ("1e308 * 10", "not a finite number"),
        ("round(1, x=2)", "keyword"),
        ("sqrt(1, 2)", "argument"),
        ("1 << 10000", "operator LShift"),
        ("import os", "not a valid expression"),
        ("", "empty"),
        ("1 +" * 300 + "1", "longer than"),
        ("(" * 210 + "1" + ")" * 210, "not a valid expression"),
    ],
)
def test_calculator_refusals(expression, reason):
    with pytest.raises(ValueError, match=reason):
        evaluate_expression(expression)


def test_calculator_refusal_through_the_executor():
    result = PythonExecutor().execute(call("calculator", {"expression": "__import__('os')"}))
    assert result.error_type == ErrorType.TOOL
    assert result.error_message.startswith("ValueError: ")


def test_current_time_valid_zone():
    before = int(time.time())
    result = PythonExecutor().execute(call("current_time", {"timezone": "Asia/Kolkata"}))
    assert result.ok, result.error_message
    out = result.output
    assert out["timezone"] == "Asia/Kolkata"
    assert out["utc_offset"] == "+05:30"
    assert out["datetime"].endswith("+05:30")
    assert before <= out["unix_timestamp"] <= int(time.time()) + 1
    default = PythonExecutor().execute(call("current_time"))
    assert default.output["timezone"] == "UTC"
    assert default.output["utc_offset"] == "+00:00"


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../../etc/passwd", "", "/etc/localtime"])
def test_current_time_invalid_zone(zone):
    result = PythonExecutor().execute(call("current_time", {"timezone": zone}))
    assert result.error_type == ErrorType.TOOL
    assert "unknown time zone" in result.error_message


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1, "km", "m", 1000),
        (1, "mi", "km", 1.609344),
        (12, "in", "ft", 1),
        (1, "kg", "lb", 2.2046226218),
        (16, "oz", "lb", 1),
        (100, "C", "F", 212),
        (32, "fahrenheit", "celsius", 0),
        (0, "K", "C", -273.15),
        (3, "meters", "feet", 9.842519685),
    ],
)
def test_unit_convert(value, source, target, expected):
    result = PythonExecutor().execute(
        call("unit_convert", {"value": value, "from_unit": source, "to_unit": target})
    )
    assert result.ok, result.error_message
    assert result.output["result"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("source", "target", "reason"),
    [("kg", "m", "mass"), ("C", "kg", "dimensions"), ("parsec", "m", "unknown unit")],
)
def test_unit_convert_refusals(source, target, reason):
    result = PythonExecutor().execute(
        call("unit_convert", {"value": 1, "from_unit": source, "to_unit": target})
    )
    assert result.error_type == ErrorType.TOOL
    assert reason in result.error_message


def test_unit_convert_below_absolute_zero():
    result = PythonExecutor().execute(
        call("unit_convert", {"value": -300, "from_unit": "C", "to_unit": "K"})
    )
    assert "absolute zero" in result.error_message


def test_text_stats():
    result = PythonExecutor().execute(call("text_stats", {"text": "Hello world\nsecond  line\n"}))
    assert result.ok
    assert result.output == {
        "characters": 25,
        "characters_without_spaces": 20,
        "words": 4,
        "lines": 2,
    }
    empty = PythonExecutor().execute(call("text_stats", {"text": ""}))
    assert empty.output == {
        "characters": 0,
        "characters_without_spaces": 0,
        "words": 0,
        "lines": 0,
    }
