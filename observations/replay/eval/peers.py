"""The context policies a user would pick instead of Atrium's, with their published
defaults (docs/replay.md, "Peers", cites each number): Anthropic's server-side clearing
of old tool results, OpenHands' summarizing condenser, and Claude Code's and Codex CLI's
auto-compaction. (JetBrains' observation masking is a row of the policy table,
``masking-10``, like SWE-agent's ``mask-last-5``.)

Each works as its system does, on the client's whole history (what ``none`` sends) at
every request, and returns what that request really holds. A summary is a model call
of its own, billed as a request: its input read from the cache as far as it repeats
the request before it, its answer (a stand-in of the stated size, cut from the text it
replaces, since no model is here to write it) billed as output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from observations.gateway.budget import Budget
from observations.gateway.messages import Message
from observations.gateway.tokens import estimate_message_tokens
from observations.gateway.transcript import Observation

# Anthropic's API puts "placeholder text" where a cleared tool result was; the string
# is not published, so a short one stands in.
CLEARED = "[tool result cleared]"
# Windows smaller than Claude's own: a trigger of 100,000 tokens is 80% of 125,000, so
# below 125k the trigger is 80% of the window.
CLEAR_TRIGGER_SHARE = 0.8


@dataclass(frozen=True, slots=True)
class Item:
    """One message of the client's history, with its estimated tokens and, for a tool
    result, its observation."""

    message: Message
    tokens: int
    observation: Observation | None = None

    @property
    def events(self) -> int:
        """How many OpenHands events it is: one per tool call of an assistant message."""
        return max(1, len(self.message.tool_calls))


@dataclass(frozen=True, slots=True)
class SummaryCall:
    """A peer's own model call: its request (after the agent's ``header`` when it is the
    agent's conversation with an instruction appended) and the stand-in answer's size."""

    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    output_tokens: int
    own_header: int | None = None  # a prompt of its own: its system part's tokens


class Peer(Protocol):
    name: str

    def request(self, history: Sequence[Item], header: int) -> tuple[list[Item], SummaryCall | None]:
        """What this request holds, and the summary call made before it (if any)."""
        ...

    def gone(self, obs: Observation) -> bool:
        """Whether the latest request lacks this result's text."""
        ...


def _stand_in(items: Sequence[Item], tokens: int, prefix: str) -> Item:
    """A summary of ``tokens`` (at most half of what it replaces), cut from the replaced
    text itself so that it reads with the same token density."""
    target = min(tokens, sum(i.tokens for i in items) // 2)
    text = "\n".join([prefix, *(i.message.text for i in items)])
    size, floor = estimate_message_tokens(text), estimate_message_tokens(prefix)
    while size > max(target, floor):
        text = text[: max(len(prefix), int(len(text) * target / size * 0.98))]
        size = estimate_message_tokens(text)
    return Item(Message("user", text), size)


class ClearToolUses:
    """Anthropic's ``clear_tool_uses_20250919`` context edit, done by the API on each
    request: once the request passes ``trigger`` input tokens, every tool result but the
    newest ``keep`` becomes a placeholder, if that clears at least ``clear_at_least``
    (here a share of the trigger)."""

    def __init__(self, name: str, window: int, *, trigger: int = 100_000, keep: int = 3,
                 clear_at_least: float = 0.0) -> None:
        self.name, self.keep = name, keep
        self.trigger = min(trigger, round(window * CLEAR_TRIGGER_SHARE))
        self.clear_at_least = round(clear_at_least * self.trigger)
        self._cleared: set[int] = set()
        self._placeholders: dict[int, Item] = {}

    def request(self, history: Sequence[Item], header: int) -> tuple[list[Item], SummaryCall | None]:
        self._cleared = set()
        if header + sum(i.tokens for i in history) > self.trigger:
            results = [i for i in history if i.observation is not None]
            old = results[: max(0, len(results) - self.keep)]
            freed = sum(i.tokens - self._placeholder(i).tokens for i in old)
            if old and freed >= self.clear_at_least:
                self._cleared = {i.observation.obs_id for i in old if i.observation is not None}
        view = [self._placeholder(i) if i.observation is not None and i.observation.obs_id in self._cleared else i
                for i in history]
        return view, None

    def gone(self, obs: Observation) -> bool:
        return obs.obs_id in self._cleared

    def _placeholder(self, item: Item) -> Item:
        obs = item.observation
        assert obs is not None
        if obs.obs_id not in self._placeholders:
            message = Message("tool", CLEARED, tool_call_id=item.message.tool_call_id, tool_name=item.message.tool_name)
            self._placeholders[obs.obs_id] = Item(message, estimate_message_tokens(CLEARED), obs)
        return self._placeholders[obs.obs_id]


@dataclass(slots=True)
class _Summarized:
    """What a summary replaced so far: history[head:upto] became ``summary``."""

    summary: Item
    upto: int
    restored: tuple[Item, ...] = ()  # files read again after the summary (Claude Code)
    gone: set[int] = field(default_factory=set)


class _Summarizing:
    """The view of a peer that replaces a stretch of the history by one summary."""

    name: str
    head: int  # leading history messages always kept

    def __init__(self) -> None:
        self._state: _Summarized | None = None

    def gone(self, obs: Observation) -> bool:
        return self._state is not None and obs.obs_id in self._state.gone

    def _view(self, history: Sequence[Item]) -> list[Item]:
        if self._state is None:
            return list(history)
        state = self._state
        return [*history[: self.head], state.summary, *state.restored, *history[state.upto:]]

    def _summarize(self, history: Sequence[Item], upto: int, summary: Item, restored: tuple[Item, ...] = ()) -> None:
        gone = set() if self._state is None else self._state.gone
        gone |= {i.observation.obs_id for i in history[self.head: upto] if i.observation is not None}
        gone -= {i.observation.obs_id for i in restored if i.observation is not None}
        self._state = _Summarized(summary, upto, restored, gone)


class SummarizingCondenser(_Summarizing):
    """OpenHands' ``LLMSummarizingCondenser``: when the view holds more than
    ``max_size`` events, the first ``keep_first`` stay (the system prompt, which the
    header is here, is one of them), the newest ``max_size // 2 - keep_first - 1`` stay,
    and one summary replaces the rest. The summary is asked for with a prompt of its
    own (the forgotten events and the previous summary), so it reads nothing cached."""

    PROMPT_TOKENS = 500  # its template's instructions (summarizing_prompt.j2)
    SUMMARY_TOKENS = 1_500  # a stand-in: the template asks for ten short sections

    def __init__(self, name: str, *, max_size: int = 120, keep_first: int = 4) -> None:
        super().__init__()
        self.name, self.max_size, self.keep_first = name, max_size, keep_first
        self.head = keep_first - 1  # the system prompt is the header

    def request(self, history: Sequence[Item], header: int) -> tuple[list[Item], SummaryCall | None]:
        view = self._view(history)
        if 1 + sum(i.events for i in view) <= self.max_size:
            return view, None
        if self._state is None:
            # The head never ends between a call and its results.
            while self.head < len(history) and history[self.head].message.role == "tool":
                self.head += 1
        keep = self.max_size // 2 - self.keep_first - 1
        upto = len(history)
        while upto > self.head and sum(i.events for i in history[upto - 1:]) <= keep:
            upto -= 1
        # A tool result is never kept without the call it answers.
        while upto < len(history) and history[upto].message.role == "tool":
            upto += 1
        start = self.head if self._state is None else self._state.upto
        upto = max(upto, start)
        forgotten = [*([self._state.summary] if self._state else []), *history[start:upto]]
        summary = _stand_in(forgotten, self.SUMMARY_TOKENS, "[summary of the events before]")
        prompt = Message("user", "[condenser prompt] " + str(len(forgotten)))
        call = SummaryCall((prompt,), (sum(i.tokens for i in forgotten) + self.PROMPT_TOKENS,),
                           summary.tokens, own_header=0)
        self._summarize(history, upto, summary)
        return self._view(history), call


class AutoCompact(_Summarizing):
    """Claude Code's and Codex CLI's auto-compaction: when the request passes
    ``threshold`` tokens, the conversation is sent once more with a summarize
    instruction appended (so it reads the cached conversation), and the history becomes
    the task, the summary and, for Claude Code, the newest reads of up to
    ``restore_files`` files the agent changed (one of more than ``file_tokens`` tokens
    comes back as its path only)."""

    def __init__(self, name: str, *, threshold: int, summary_tokens: int, prompt_tokens: int,
                 restore_files: int = 0, file_tokens: int = 5_000) -> None:
        super().__init__()
        self.name, self.head, self.threshold = name, 1, threshold  # head: the task
        self.summary_tokens, self.prompt_tokens = summary_tokens, prompt_tokens
        self.restore_files, self.file_tokens = restore_files, file_tokens

    def request(self, history: Sequence[Item], header: int) -> tuple[list[Item], SummaryCall | None]:
        view = self._view(history)
        if header + sum(i.tokens for i in view) <= self.threshold:
            return view, None
        instruction = Message("user", "[compact instruction]")
        call = SummaryCall((*(i.message for i in view), instruction),
                           (*(i.tokens for i in view), self.prompt_tokens), self.summary_tokens)
        summary = _stand_in(view[self.head:], self.summary_tokens, "[summary of the conversation]")
        self._summarize(history, len(history), summary, self._restored(history))
        return self._view(history), call

    def _restored(self, history: Sequence[Item]) -> tuple[Item, ...]:
        changed: list[str] = []
        for item in reversed(history):
            obs = item.observation
            for path in obs.source.written if obs is not None else ():
                if path not in changed and len(changed) < self.restore_files:
                    changed.append(path)
        restored = []
        for path in changed:
            read = next((i for i in reversed(history) if i.observation is not None
                         and i.observation.source.read is not None and i.observation.source.read.path == path), None)
            if read is not None and read.tokens <= self.file_tokens:
                restored.append(Item(Message("user", read.message.text), read.tokens, read.observation))
            else:
                reference = f"[file {path} was changed; read it again to see it]"
                restored.append(Item(Message("user", reference), estimate_message_tokens(reference)))
        return tuple(restored)


def _claude_code(budget: Budget) -> AutoCompact:
    # "approximately 95% capacity", capacity being the window less the output reserve
    # (the smaller of the output limit and 20,000 tokens).
    threshold = round(0.95 * (budget.window - min(budget.output_budget, 20_000)))
    return AutoCompact("auto-compact-claude-code", threshold=threshold, summary_tokens=4_000,
                       prompt_tokens=1_000, restore_files=5)


# Each peer by name, made for one budget (docs/replay.md, "Peers", has the sources).
PEERS = {
    "anthropic-clear": lambda budget: ClearToolUses("anthropic-clear", budget.window),
    # clear_at_least (no default) set to a quarter of the trigger: 25,000 tokens at 100,000.
    "anthropic-clear-at-least": lambda budget: ClearToolUses("anthropic-clear-at-least", budget.window,
                                                             clear_at_least=0.25),
    "openhands-condenser": lambda budget: SummarizingCondenser("openhands-condenser"),
    "auto-compact-claude-code": _claude_code,
    # model_auto_compact_token_limit: 90% of the context window.
    "auto-compact-codex": lambda budget: AutoCompact("auto-compact-codex", threshold=round(0.9 * budget.window),
                                                     summary_tokens=1_000, prompt_tokens=300),
}
