"""The fixed-prefix breakdown of a request (observations.gateway.breakdown), as rows for
people: what each part costs in bytes and tokens, and its share of the request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from observations.gateway.breakdown import FIXED_PARTS, breakdown_total
from sessions.analysis.facts import CallFact


@dataclass(frozen=True, slots=True)
class PrefixRow:
    part: str
    bytes: int
    tokens: int
    share: float  # percent of the request's estimated tokens
    fixed: bool  # sent with every request
    indent: bool = False  # one tool inside "tools"


@dataclass(frozen=True, slots=True)
class PrefixBreakdown:
    step: int
    rows: tuple[PrefixRow, ...]
    estimated: int  # the parts' tokens added up
    projected: int  # the gateway's projection (calibrated)
    reported: int  # what the provider counted (0: not reported)

    @property
    def fixed_tokens(self) -> int:
        return sum(r.tokens for r in self.rows if r.fixed and not r.indent)

    @property
    def error_percent(self) -> float | None:
        """How far the parts' sum is from the provider's count, in percent."""
        if not self.reported:
            return None
        return round(100.0 * (self.estimated - self.reported) / self.reported, 1)


def prefix_breakdown(call: CallFact) -> PrefixBreakdown | None:
    """Rows for ``call``'s request, fixed parts first; None if it has no breakdown."""
    parts: dict[str, Any] = call.prefix
    if not parts:
        return None
    total = breakdown_total(parts) or 1
    order = [name for name in FIXED_PARTS if name in parts] + sorted(n for n in parts if n not in FIXED_PARTS)
    rows: list[PrefixRow] = []
    for name in order:
        part = parts[name]
        rows.append(PrefixRow(name, int(part["bytes"]), int(part["tokens"]),
                              round(100.0 * int(part["tokens"]) / total, 1), name in FIXED_PARTS))
        for tool, each in sorted((part.get("each") or {}).items(), key=lambda kv: -int(kv[1]["tokens"])):
            rows.append(PrefixRow(tool, int(each["bytes"]), int(each["tokens"]),
                                  round(100.0 * int(each["tokens"]) / total, 1), True, indent=True))
    return PrefixBreakdown(step=call.step, rows=tuple(rows), estimated=breakdown_total(parts),
                           projected=call.projected_tokens, reported=call.input_tokens)


def latest_breakdown(calls: tuple[CallFact, ...]) -> PrefixBreakdown | None:
    """The breakdown of the newest request that has one."""
    for call in reversed(calls):
        if call.prefix:
            return prefix_breakdown(call)
    return None
