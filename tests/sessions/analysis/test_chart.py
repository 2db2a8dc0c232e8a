"""The session charts as SVG: points per request, limits, fold and segment markers, cost."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from xml.etree import ElementTree

from sessions.analysis.chart import context_chart, cost_chart
from sessions.analysis.facts import Budgets, CallFact, FoldFact, SegmentFact, SessionFacts


def facts(**extra) -> SessionFacts:
    calls = tuple(CallFact(step=s, model="m", input_tokens=1_000 * s, projected_tokens=1_000 * s + 50,
                           cost=Decimal("0.01")) for s in range(1, 7))
    return SessionFacts(session_id=1, title="t", agent="a", model="m", state="running", steps=6, calls=calls,
                        budgets=Budgets(trigger=8_000, ceiling=9_000, window=10_000), **extra)


def test_the_context_chart_has_a_point_per_request_the_limits_and_the_folds():
    svg = context_chart(facts(folds=(FoldFact(number=1, step=3, tokens_freed=2_000, evicted=4),),
                              segments=(SegmentFact(1, 0), SegmentFact(2, 5, 3_000))))
    root = ElementTree.fromstring(svg)  # well-formed
    assert root.get("data-requests") == "6"
    assert len(re.findall(r'class="chart__point" data-step="\d+"', svg)) == 6
    for name in ("window", "ceiling", "trigger"):
        assert f"chart__limit--{name}" in svg
    assert "fold #1 at step 3: 2,000 tokens freed" in svg and "segment 2 from step 5" in svg
    assert "chart__series--projected" in svg


def test_the_cost_chart_runs_up_to_the_sum_and_says_when_nothing_is_priced():
    svg = cost_chart(facts())
    ElementTree.fromstring(svg)
    assert 'data-points="6"' in svg and "$0.0600 after step 6" in svg
    base = facts()
    unpriced = cost_chart(replace(base, calls=tuple(replace(c, cost=None) for c in base.calls)))
    ElementTree.fromstring(unpriced)
    assert 'data-points="0"' in unpriced and "No call has a price" in unpriced
