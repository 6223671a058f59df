"""Continuous percentiles, the same definition in SQL (PostgreSQL) and in Python."""

from __future__ import annotations

import math
from collections.abc import Iterable

from django.db.models import Aggregate, FloatField


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY expr)`` (linear interpolation)."""

    function = "percentile_cont"
    name = "PercentileCont"
    output_field = FloatField()
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, fraction: float, expression, **extra):
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError("fraction must be between 0 and 1")
        # A float we validated, rendered as a literal: never user text.
        super().__init__(expression, fraction=repr(fraction), **extra)


def percentile_cont(values: Iterable[float], fraction: float) -> float | None:
    """The same definition as ``percentile_cont`` in SQL, in Python (``None`` when empty)."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
