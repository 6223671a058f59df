"""Tiny server-side charts as inline SVG: no JavaScript, no CDN, nothing fetched.

Every piece of text (titles, labels, legend, tooltips) goes through
``django.utils.html.escape``; colours must be hex literals. The result is a
``SafeString`` to drop into a template as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_COLOUR = re.compile(r"^#[0-9a-fA-F]{3,8}$")
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 16, 36, 44
MAX_X_LABELS = 8


@dataclass(frozen=True)
class Series:
    """One stacked layer (or one line): its label, its colour and one value per bucket."""

    label: str
    colour: str
    values: Sequence[float | None]


def _colour(value: str) -> str:
    if not _COLOUR.match(value):
        raise ValueError(f"not a hex colour: {value!r}")
    return value


def axis_top(value: float, *, ticks: int = 4, integer: bool = False) -> float:
    """A readable top for the y axis: ``ticks`` equal steps of a round size (1, 1.5 .. 8 times 10^k).

    With ``integer`` (counts) every tick is a whole number.
    """
    if value <= 0:
        return float(ticks) if integer else 1.0
    raw = value / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if raw <= m * power)
    if integer:
        step = max(1, math.ceil(step))
    return step * ticks


def _number(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.3g}"


def _frame(
    *, width: int, height: int, title: str, top: float, unit: str, labels: Sequence[str]
) -> list[str]:
    """The SVG opening, title, horizontal grid with y ticks, and x labels."""
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    parts = [
        f'<svg class="toolhub-chart" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="{escape(title)}" '
        'style="max-width:100%;height:auto;font-family:sans-serif;font-size:11px">',
        f"<title>{escape(title)}</title>",
        f'<text x="{MARGIN_LEFT}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    ticks = 4
    for index in range(ticks + 1):
        value = top * index / ticks
        y = MARGIN_TOP + plot_h - plot_h * index / ticks
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#ddd" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(_number(value))}{escape(unit) if index == ticks else ''}</text>"
        )
    count = len(labels)
    if count:
        every = max(1, math.ceil(count / MAX_X_LABELS))
        slot = plot_w / count
        for index in range(0, count, every):
            x = MARGIN_LEFT + slot * (index + 0.5)
            parts.append(
                f'<text x="{x:.1f}" y="{height - MARGIN_BOTTOM + 16}" text-anchor="middle">'
                f"{escape(labels[index])}</text>"
            )
    return parts


def _legend(series: Sequence[Series], width: int) -> list[str]:
    parts = []
    x = width - MARGIN_RIGHT
    # Right-aligned, laid out from the right edge leftwards.
    for layer in reversed(series):
        text_w = 7 * len(layer.label) + 4
        x -= text_w
        parts.append(f'<text x="{x:.1f}" y="28">{escape(layer.label)}</text>')
        x -= 14
        parts.append(
            f'<rect x="{x:.1f}" y="19" width="10" height="10" fill="{_colour(layer.colour)}"/>'
        )
        x -= 10
    return parts


def _empty(parts: list[str], width: int, height: int) -> SafeString:
    parts.append(
        f'<text x="{width / 2:.1f}" y="{height / 2:.1f}" text-anchor="middle" fill="#888">'
        "No data in this range</text></svg>"
    )
    return mark_safe("".join(parts))


def stacked_bars(
    *,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    unit: str = "",
    width: int = 900,
    height: int = 260,
) -> SafeString:
    """Bars per bucket (``labels``), each stacked from ``series`` in order (bottom first)."""
    totals = [sum((layer.values[i] or 0) for layer in series) for i in range(len(labels))]
    top = axis_top(max(totals, default=0), integer=True)
    parts = _frame(width=width, height=height, title=title, top=top, unit=unit, labels=labels)
    parts.extend(_legend(series, width))
    if not any(totals):
        return _empty(parts, width, height)
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / len(labels)
    bar_w = max(1.0, slot * 0.8)
    for index, label in enumerate(labels):
        x = MARGIN_LEFT + slot * index + (slot - bar_w) / 2
        base = MARGIN_TOP + plot_h
        for layer in series:
            value = layer.values[index] or 0
            if value <= 0:
                continue
            bar_h = plot_h * value / top
            base -= bar_h
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{bar_h:.1f}" '
                f'fill="{_colour(layer.colour)}"><title>{escape(label)} · '
                f"{escape(layer.label)}: {escape(_number(value))}</title></rect>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def line_chart(
    *,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    unit: str = "",
    width: int = 900,
    height: int = 260,
) -> SafeString:
    """Lines through each series' points; a ``None`` value leaves a gap."""
    present = [v for layer in series for v in layer.values if v is not None]
    top = axis_top(max(present, default=0))
    parts = _frame(width=width, height=height, title=title, top=top, unit=unit, labels=labels)
    parts.extend(_legend(series, width))
    if not present:
        return _empty(parts, width, height)
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / len(labels)
    for layer in series:
        colour = _colour(layer.colour)
        path: list[str] = []
        dots: list[str] = []
        pen_down = False
        for index, value in enumerate(layer.values):
            if value is None:
                pen_down = False
                continue
            x = MARGIN_LEFT + slot * (index + 0.5)
            y = MARGIN_TOP + plot_h - plot_h * value / top
            path.append(f"{'L' if pen_down else 'M'}{x:.1f},{y:.1f}")
            pen_down = True
            dots.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}">'
                f"<title>{escape(labels[index])} · {escape(layer.label)}: "
                f"{escape(_number(value))}{escape(unit)}</title></circle>"
            )
        if path:
            parts.append(
                f'<path d="{" ".join(path)}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        parts.extend(dots)
    parts.append("</svg>")
    return mark_safe("".join(parts))
