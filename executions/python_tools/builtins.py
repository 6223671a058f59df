"""Built-in Python tools that need no network: calculator, current_time, unit_convert, text_stats.

Imported by ``executions.python_tools`` so they are registered whenever the
registry is.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from executions.python_tools.registry import tool

# --------------------------------------------------------------------------- calculator

MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 1000  # |b| in a ** b
MAX_INT_BITS = 4096  # about 1233 decimal digits
MAX_NODES = 200

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _min(*args: float) -> float:
    return min(args)


def _max(*args: float) -> float:
    return max(args)


def _round(value: float, ndigits: int | None = None) -> float:
    if ndigits is not None and (not isinstance(ndigits, int) or abs(ndigits) > 100):
        raise ValueError("round() takes a whole number of digits between -100 and 100")
    return round(value, ndigits) if ndigits is not None else round(value)


def _log(value: float, base: float | None = None) -> float:
    return math.log(value) if base is None else math.log(value, base)


# name -> (function, min args, max args)
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (_min, 1, 50),
    "max": (_max, 1, 50),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "exp": (math.exp, 1, 1),
    "log": (_log, 1, 2),
    "log10": (math.log10, 1, 1),
    "log2": (math.log2, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
}


def _check_number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError("the result is too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("the result is too large (not a finite number)")
    return value


def _power(base: int | float, exponent: int | float) -> int | float:
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"exponent too large (the limit is {MAX_EXPONENT})")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if max(base.bit_length(), 1) * exponent > MAX_INT_BITS * 2:
            raise ValueError("the result is too large")
    return base**exponent


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ValueError(f"only numbers are allowed, not {node.value!r}")
        return _check_number(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _check_number(_power(left, right))
        return _check_number(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check_number(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ValueError(f"unknown name {node.id!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            raise ValueError("only these functions may be called: " + ", ".join(sorted(_FUNCTIONS)))
        if node.keywords:
            raise ValueError("keyword arguments are not allowed")
        function, least, most = _FUNCTIONS[node.func.id]
        if not least <= len(node.args) <= most:
            raise ValueError(f"{node.func.id}() takes {least} to {most} argument(s)")
        args = [_evaluate(arg) for arg in node.args]
        return _check_number(function(*args))
    if isinstance(node, ast.Attribute):
        raise ValueError("attribute access is not allowed")
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        raise ValueError(f"the operator {type(node.op).__name__} is not allowed")
    raise ValueError(f"{type(node).__name__} is not allowed in an arithmetic expression")


def evaluate_expression(expression: str) -> int | float:
    """Evaluate arithmetic safely with ``ast`` (no eval/exec); ValueError when refused."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("the expression is empty")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"not a valid expression: {getattr(exc, 'msg', exc)}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ValueError("the expression is too complex")
    try:
        return _evaluate(tree)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large") from None
    except RecursionError:
        raise ValueError("the expression is too deeply nested") from None
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    except ValueError as exc:
        if str(exc) == "math domain error":
            raise ValueError("math domain error (e.g. sqrt or log of a negative number)") from None
        raise


@tool(category="math", safety="safe", speed="fast")
def calculator(expression: str) -> dict[str, Any]:
    """Evaluate an arithmetic expression: numbers, + - * / // % ** (exponent at most 1000),
    unary +/-, parentheses, the functions sqrt, abs, round, min, max, floor, ceil, exp,
    log, log10, log2, sin, cos, tan, and the constants pi, e and tau.

    Anything else (names, attributes, other calls) is refused.

    Args:
        expression: The expression, e.g. "2 * (3 + 4) ** 2" or "sqrt(2) / 2".
    """
    return {"expression": expression, "result": evaluate_expression(expression)}


# --------------------------------------------------------------------------- current_time


@tool(category="time", safety="safe", speed="fast")
def current_time(timezone: str = "UTC") -> dict[str, Any]:
    """Return the current date and time in a time zone.

    Args:
        timezone: An IANA time zone name such as "UTC", "Europe/Paris" or "America/New_York".
    """
    try:
        zone = ZoneInfo(timezone.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {timezone!r}; use an IANA name such as 'Europe/Paris'"
        ) from None
    now = dt.datetime.now(zone)
    offset = now.strftime("%z")
    return {
        "timezone": zone.key,
        "datetime": now.isoformat(),
        "date": now.date().isoformat(),
        "time": now.strftime("%H:%M:%S"),
        "weekday": now.strftime("%A"),
        "utc_offset": f"{offset[:3]}:{offset[3:]}",
        "unix_timestamp": int(now.timestamp()),
    }


# --------------------------------------------------------------------------- unit_convert

# unit -> (dimension, factor to the base unit: metre, kilogram)
_LINEAR_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mg": ("mass", 1e-6),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "t": ("mass", 1000.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
}
_TEMPERATURE_UNITS = {"c", "f", "k"}
_ALIASES = {
    "millimeter": "mm",
    "millimetre": "mm",
    "centimeter": "cm",
    "centimetre": "cm",
    "meter": "m",
    "metre": "m",
    "kilometer": "km",
    "kilometre": "km",
    "inch": "in",
    "inches": "in",
    "foot": "ft",
    "feet": "ft",
    "yard": "yd",
    "mile": "mi",
    "milligram": "mg",
    "gram": "g",
    "kilogram": "kg",
    "tonne": "t",
    "ounce": "oz",
    "pound": "lb",
    "lbs": "lb",
    "celsius": "c",
    "°c": "c",
    "fahrenheit": "f",
    "°f": "f",
    "kelvin": "k",
}


def _unit(raw: str) -> str:
    key = raw.strip().lower()
    key = _ALIASES.get(key, _ALIASES.get(key.rstrip("s"), key))
    if key in _LINEAR_UNITS or key in _TEMPERATURE_UNITS:
        return key
    known = sorted([*_LINEAR_UNITS, "C", "F", "K"])
    raise ValueError(f"unknown unit {raw!r}; known units: {', '.join(known)}")


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[unit]


@tool(category="math", safety="safe", speed="fast")
def unit_convert(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    """Convert a value between units of length (mm, cm, m, km, in, ft, yd, mi),
    mass (mg, g, kg, t, oz, lb) or temperature (C, F, K).

    Full names (metre, pound, celsius…) work too.

    Args:
        value: The amount to convert.
        from_unit: The unit of the value.
        to_unit: The unit to convert to (same dimension).
    """
    source, target = _unit(from_unit), _unit(to_unit)
    if source in _TEMPERATURE_UNITS or target in _TEMPERATURE_UNITS:
        if not (source in _TEMPERATURE_UNITS and target in _TEMPERATURE_UNITS):
            raise ValueError(f"cannot convert {from_unit!r} to {to_unit!r}: different dimensions")
        kelvin = _to_kelvin(float(value), source)
        if kelvin < 0:
            raise ValueError("the temperature is below absolute zero")
        result = _from_kelvin(kelvin, target)
        dimension = "temperature"
    else:
        (source_dim, source_factor), (target_dim, target_factor) = (
            _LINEAR_UNITS[source],
            _LINEAR_UNITS[target],
        )
        if source_dim != target_dim:
            raise ValueError(
                f"cannot convert {from_unit!r} ({source_dim}) to {to_unit!r} ({target_dim})"
            )
        result = float(value) * source_factor / target_factor
        dimension = source_dim
    return {
        "value": value,
        "from_unit": from_unit,
        "to_unit": to_unit,
        "dimension": dimension,
        "result": round(result, 10),
    }


# --------------------------------------------------------------------------- text_stats


@tool(category="text", safety="safe", speed="fast")
def text_stats(text: str) -> dict[str, int]:
    """Count the characters, words and lines of a text.

    Args:
        text: The text to measure.
    """
    return {
        "characters": len(text),
        "characters_without_spaces": sum(1 for ch in text if not ch.isspace()),
        "words": len(text.split()),
        "lines": len(text.splitlines()),
    }
