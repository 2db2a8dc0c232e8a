"""The session page's charts as server-rendered SVG: the size of every request over the
steps against the trigger, the ceiling and the window, with folds and segments marked;
and the cumulative cost beside it.

SVG drawn here rather than a JavaScript chart library: nothing to vendor or keep up to
date, no script to load, it works offline and without JavaScript, and the page
refreshes it live the way it refreshes the status region (htmx on the session
socket's events). Plain Python; every text is escaped.
"""

from __future__ import annotations

import math
from decimal import Decimal
from html import escape

from observations.gateway.prices import format_usd
from sessions.analysis.facts import SessionFacts

WIDTH, HEIGHT, COST_HEIGHT = 640, 240, 140
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 28


def _ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to about ``top``."""
    if top <= 0:
        return [0.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(int(top // step) + 1)]


def _tokens(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


class _Frame:
    """Maps steps and values to the drawing area of one chart."""

    def __init__(self, last_step: int, top: float, height: int) -> None:
        self.last_step, self.top, self.height = max(last_step, 1), top or 1, height

    def x(self, step: float) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * step / self.last_step, 1)

    def y(self, value: float) -> float:
        return round(self.height - BOTTOM - (self.height - TOP - BOTTOM) * float(value) / float(self.top), 1)

    def axes(self, label) -> list[str]:
        parts = [f'<line class="chart__axis" x1="{LEFT}" y1="{self.y(0)}" x2="{WIDTH - RIGHT}" y2="{self.y(0)}"/>']
        for tick in _ticks(float(self.top)):
            y = self.y(tick)
            parts.append(f'<line class="chart__grid" x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}"/>'
                         f'<text class="chart__tick" x="{LEFT - 6}" y="{y + 4}" text-anchor="end">'
                         f"{escape(label(tick))}</text>")
        for step in sorted({0, self.last_step, *range(0, self.last_step + 1, max(1, self.last_step // 8))}):
            parts.append(f'<text class="chart__tick" x="{self.x(step)}" y="{self.height - 8}" '
                         f'text-anchor="middle">{step}</text>')
        return parts


def context_chart(facts: SessionFacts) -> str:
    """Request size per step: reported (solid, points), projected (dotted), limits, folds."""
    calls = [c for c in facts.calls if c.context_tokens]
    last_step = max([facts.steps, *(c.step for c in calls)], default=1)
    budgets = facts.budgets
    top = max([budgets.window, *(c.context_tokens for c in calls), *(c.projected_tokens for c in calls), 1]) * 1.05
    frame = _Frame(last_step, top, HEIGHT)
    parts = [f'<svg id="context-chart" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'data-requests="{len(calls)}" aria-label="Context size of {len(calls)} requests over {last_step} '
             f'steps">', *frame.axes(_tokens)]
    for name, value in (("window", budgets.window), ("ceiling", budgets.ceiling), ("trigger", budgets.trigger)):
        if value:
            y = frame.y(value)
            parts.append(f'<line class="chart__limit chart__limit--{name}" x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" '
                         f'y2="{y}"><title>{name}: {value:,} tokens</title></line>'
                         f'<text class="chart__label chart__label--{name}" x="{WIDTH - RIGHT - 4}" y="{y - 4}" '
                         f'text-anchor="end">{name} {_tokens(value)}</text>')
    for fold in facts.folds:
        x = frame.x(fold.step + 0.5)
        parts.append(f'<line class="chart__marker chart__marker--fold" x1="{x}" y1="{TOP}" x2="{x}" '
                     f'y2="{frame.y(0)}"><title>fold #{fold.number} at step {fold.step}: '
                     f'{fold.tokens_freed:,} tokens freed</title></line>'
                     f'<text class="chart__label" x="{x + 3}" y="{TOP + 10}">fold {fold.number}</text>')
    for segment in facts.segments[1:]:
        x = frame.x(segment.step + 0.5)
        parts.append(f'<line class="chart__marker chart__marker--segment" x1="{x}" y1="{TOP}" x2="{x}" '
                     f'y2="{frame.y(0)}"><title>segment {segment.number} from step {segment.step}</title></line>')
    if calls:
        projected = " ".join(f"{frame.x(c.step)},{frame.y(c.projected_tokens)}" for c in calls if c.projected_tokens)
        if projected:
            parts.append(f'<polyline class="chart__series chart__series--projected" points="{projected}"/>')
        reported = " ".join(f"{frame.x(c.step)},{frame.y(c.context_tokens)}" for c in calls)
        parts.append(f'<polyline class="chart__series" points="{reported}"/>')
        for c in calls:
            parts.append(f'<circle class="chart__point" data-step="{c.step}" cx="{frame.x(c.step)}" '
                         f'cy="{frame.y(c.context_tokens)}" r="3"><title>step {c.step}: {c.input_tokens:,} tokens '
                         f'reported, {c.projected_tokens:,} projected</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def cost_chart(facts: SessionFacts) -> str:
    """Cumulative cost of the priced calls over the steps."""
    running, points = Decimal(0), []
    for call in facts.calls:
        if call.cost is not None:
            running += call.cost
            points.append((call.step, running))
    if not points:
        return (f'<svg id="cost-chart" class="chart" viewBox="0 0 {WIDTH} 40" role="img" data-points="0" '
                f'aria-label="No priced calls"><text class="chart__label" x="{LEFT}" y="24">No call has a price '
                "yet: the model is not in the price table and its profile sets no prices.</text></svg>")
    last_step = max([facts.steps, *(c.step for c in facts.calls)], default=1)
    frame = _Frame(last_step, float(running) * 1.1 or 1, COST_HEIGHT)
    parts = [f'<svg id="cost-chart" class="chart" viewBox="0 0 {WIDTH} {COST_HEIGHT}" role="img" '
             f'data-points="{len(points)}" aria-label="Cumulative cost: {escape(format_usd(running))}">',
             *frame.axes(lambda v: format_usd(Decimal(str(v))))]
    line = " ".join(f"{frame.x(step)},{frame.y(value)}" for step, value in points)
    parts.append(f'<polyline class="chart__series chart__series--cost" points="{line}"/>')
    step, value = points[-1]
    parts.append(f'<circle class="chart__point" cx="{frame.x(step)}" cy="{frame.y(value)}" r="3">'
                 f"<title>{escape(format_usd(value))} after step {step}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
