"""Bills a replayed run's requests: each against the one sent before it (prefix caching)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from observations.gateway.messages import Message
from observations.replay.eval.cost import CostModel

if TYPE_CHECKING:
    from observations.replay.eval.engine import RunResult


class Biller:
    """Bills each request sent, against the one sent before it (prefix caching)."""

    def __init__(self, result: RunResult, cost: CostModel, header: int) -> None:
        self.result, self.cost, self.header = result, cost, header
        self.previous: tuple[Message, ...] = ()
        self.previous_sent = 0

    def request(self, messages: tuple[Message, ...], tokens: list[int], output: int, *,
                rewritten: bool = False, side: bool = False, header: int | None = None) -> None:
        """``rewritten``: a fold request or a new segment's first request, which the
        strict accounting charges as a cache write whole. ``side``: a call of the
        policy's own (a peer's summary), which the agent's next request does not follow;
        ``header``: its system part's tokens, where it is not the agent's."""
        result = self.result
        own_prompt = header is not None
        sent = (header if own_prompt else self.header) + sum(tokens)
        shared = 0 if own_prompt else _shared_prefix_tokens(self.previous, messages, tokens, self.header)
        billed = self.cost.split(sent, shared, self.previous_sent)
        strict = self.cost.split(sent, 0, self.previous_sent) if rewritten else billed
        result.sent.append(sent)
        result.cache_read.append(billed.cache_read)
        result.cache_write.append(billed.cache_write)
        result.uncached.append(billed.uncached)
        result.input_cost += self.cost.input_cost(billed)
        result.input_cost_full_write += self.cost.input_cost(strict)
        result.cache_read_full_write += strict.cache_read
        result.output_tokens += output
        result.output_cost += self.cost.output * output
        result.step_costs[-1] += self.cost.input_cost(strict) + self.cost.output * output
        whole = self.cost.split(sent, 0, self.previous_sent)
        result.step_fold_costs[-1] += self.cost.input_cost(whole) + self.cost.output * output
        result.step_blocked[-1] = result.step_blocked[-1] or sent > result.ceiling
        if not side:
            self.previous, self.previous_sent = messages, sent


def _shared_prefix_tokens(
    previous: tuple[Message, ...], current: tuple[Message, ...], tokens: list[int], header: int
) -> int:
    """Tokens of the leading part of ``current`` identical to ``previous`` (system and
    tools included). Within an epoch the gateway reuses its rendered messages, so
    identity settles almost every comparison."""
    if not previous:
        return 0
    shared = header
    for index, message in enumerate(current):
        if index >= len(previous):
            break
        other = previous[index]
        if message is not other and message != other:
            break
        shared += tokens[index]
    return shared


def appends(previous: tuple[Message, ...], current: tuple[Message, ...]) -> bool:
    """Whether ``current`` only adds messages after all of ``previous``."""
    return len(current) >= len(previous) and all(
        a is b or a == b for a, b in zip(previous, current, strict=False))
