"""A client's conversation through the gateway endpoint as a real Session: the database
side of the proxied sessions (the decisions are ``feed``'s, plain Python).

The first request of a conversation makes a Task (its objective: its last user
message) and a Session of the key's agent with ``origin`` "endpoint", so the room lists
it with its ledger, accounting and live log; no worker claims it and the sweep never
times it out (sessions.runtime.claims.WORKER_ORIGIN): its client's requests run it.

Each request runs ``proxied_turn`` in a worker thread, holding the conversation's lock
(two requests of one conversation are served one after the other; the upstream call is
made under it): on PostgreSQL a transaction holding the conversation's row lock, on
SQLite, where any open write transaction locks the whole database, ``turn_lock`` (a
lock of the conversation's own in the process, a file lock across processes), with
only the saving in a transaction. Under the lock: restore the gateway
state, feed what is new, deliver the room's steers, let the gateway prepare the
request, send it, record the calls and save the state, as a worker's unit does
(sessions/worker/run.py ``commit``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agents.providers import Completion, ProviderError, RetryPolicy, provider_for
from agents.providers.base import DeltaSink
from agents.providers.storable import storable_delta, storable_turn
from agents.providers.timeouts import DEFAULT_TIMEOUTS, Timeouts
from endpoint import turn_lock
from endpoint.cache import BoundedCache
from endpoint.conversation import (
    answer_digest,
    answer_digests,
    continues,
    message_digests,
    named,
    placement,
)
from endpoint.feed import Exchange, changed_by, output_reserved, take
from endpoint.hot import CONTEXTS, HISTORIES, Kept
from endpoint.models import GatewayAnswer, GatewayConversation, GatewayKey
from endpoint.routing import routed
from endpoint.upstream import profile_endpoint, provider_failure
from endpoint.wire import WireError
from observations.blobs import blob_texts
from observations.calibration import calibration_load
from observations.columns import Columns, instances
from observations.gateway.budget import Budget
from observations.gateway.context import ContextTooLarge, SessionContext
from observations.gateway.economics import CacheEconomics, LengthPrior
from observations.gateway.journal import StateJournal
from observations.gateway.messages import ModelTurn, Request
from observations.gateway.state import load_state, reuse_state
from observations.inserts import rows_insert
from rooms.models import Message
from rooms.services import message_mark_delivered
from sessions.events import session_event_append
from sessions.ledger.history import history_record
from sessions.ledger.state_store import gateway_session_read, gateway_state_read, gateway_state_save
from sessions.models import Session, Task
from sessions.runtime import states
from sessions.runtime.delivery import chat_cursor_after, deliver_inputs
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.write_watch import FILE_CHANGED
from sessions.selectors import session_lengths
from sessions.services.records import unit_records_save
from sessions.services.talk import agent_mentions_mark_delivered
from sessions.worker import inputs

log = logging.getLogger(__name__)

TITLE_MAX = 80
OBJECTIVE_MAX = 4000
FORKS_LOOKED_AT = 50  # a retried fork's first request is among the newest

# Providers by endpoint, shared by the requests of every conversation (as the
# pass-through keeps its SDK clients). The SDKs' sync clients are safe to share between
# threads; a provider keeps no state between calls. One dropped from the full cache is
# not closed: another request may be calling it; its connections go with it.
_PROVIDERS: BoundedCache[Any] = BoundedCache(64)


@dataclass
class _Host:
    """What ``feed.Exchange`` and the segment starter call: the profile's provider (no
    retries of ours: the client's SDK retries as it would against the provider), and
    the events for the session's live log, appended when the unit commits."""

    provider: Any
    events: list[tuple[str, dict[str, Any]]]

    def call_model(self, request: Request, on_delta: DeltaSink | None = None) -> Completion:
        # What the client is given is what the session stores: NUL and lone halves cleaned.
        sink = None if on_delta is None else lambda delta: on_delta(storable_delta(delta))
        completion = self.provider.call(request, on_delta=sink)
        return dataclasses.replace(completion, turn=storable_turn(completion.turn))

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((kind, payload))


def proxied_turn(*, key: GatewayKey, conversation: str, request: Request,
                 on_delta: DeltaSink | None = None) -> ModelTurn:
    """The answer to one request of ``conversation``; raises WireError for what the
    client must hear instead (its session cancelled, a context that does not fit, the
    upstream's refusal), after the calls made and the state are saved. ``on_delta``:
    the turn is streamed from the upstream, each piece given to it as it arrives; it is
    recorded when the stream ends (a stream the client left: the call, failed)."""
    failure: WireError | None = None
    HISTORIES.carry((key.pk, conversation), request.messages)
    digests = message_digests(request.messages)
    # A conversation the client named is placed without the gateway's answers.
    answers = [] if named(conversation) else answer_digests(request.messages)
    if not named(conversation):
        conversation = routed(key, digests, answers) or conversation
    with _one_request_at_a_time(key, conversation):
        talk = _conversation_locked(key, conversation, request)
        if placement(talk.digests, talk.last_answer, digests, answers, client_named=named(conversation)) == "fork":
            talk = _conversation_forked(key, talk, request, digests)
        # Read after the lock, not joined to its statement: a statement that waited for
        # the lock sees the other rows as they were when it began, before the request
        # it waited for committed its counts and cursor. Not locked: the conversation's
        # lock already makes this request the session's only writer of its state and
        # counts, and a lock held while the request is upstream would hold up a person
        # who cancels or steers it (a cancel is seen by the next request).
        session = gateway_session_read(talk.session_id)
        if session.state != states.RUNNING:
            raise _ended(session)
        turn, failure = _unit(session, talk, request, digests, on_delta)
    if failure is not None:
        raise failure
    assert turn is not None
    return turn


@contextmanager
def _one_request_at_a_time(key: GatewayKey, conversation: str) -> Iterator[None]:
    if connection.vendor != "sqlite":
        with transaction.atomic():  # _conversation_locked takes the row lock in it
            yield
        return
    with turn_lock.one_request_at_a_time(Path(settings.DATA_DIR) / "locks", f"{key.pk}:{conversation}"):
        yield


def _conversation_locked(key: GatewayKey, conversation: str, request: Request) -> GatewayConversation:
    """The conversation's row, locked; made with its task and session on its first
    request (two first requests at once: one makes it, the other waits for its lock)."""
    with connection.cursor() as cursor:
        cursor.execute(_locked_statement(), [key.pk, conversation])
        row = cursor.fetchone()
    if row is not None:
        return instances(row, [_CONVERSATION])[0]
    try:
        with transaction.atomic():
            _conversation_open(key, conversation, request)
    except IntegrityError:
        pass
    return GatewayConversation.objects.select_for_update(no_key=True).get(key=key, conversation=conversation)


_CONVERSATION = Columns(GatewayConversation, "c")


@functools.cache
def _locked_statement() -> str:
    """The conversation's row, locked as select_for_update(no_key=True) locks it: read
    on every request, so written out (the ORM took about 1 ms to build it)."""
    features, lock = connection.features, ""
    if features.has_select_for_update:
        lock = " " + connection.ops.for_update_sql(no_key=features.has_select_for_no_key_update)
    c = _CONVERSATION
    return f"SELECT {c.select()} FROM {c.table} WHERE {c.column('key')} = %s AND {c.column('conversation')} = %s{lock}"


def _conversation_forked(key: GatewayKey, talk: GatewayConversation, request: Request,
                         digests: list[str]) -> GatewayConversation:
    """A conversation of its own for another run whose history started like ``talk``'s:
    the fork this history already continues (a retried request whose first answer never
    came), else a new one."""
    base = talk.conversation.split("~", 1)[0]
    forks = GatewayConversation.objects.select_for_update(no_key=True).filter(
        key=key, conversation__startswith=f"{base}~").order_by("-updated_at")[:FORKS_LOOKED_AT]
    for fork in forks:
        if fork.pk != talk.pk and fork.digests and continues(fork.digests, digests):
            return fork
    with transaction.atomic():
        return _conversation_open(key, f"{base}~{secrets.token_hex(6)}", request)


# Claude Code's notes of its own in a user's turn (and the gateway's for a system message).
HARNESS_NOTE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _conversation_open(key: GatewayKey, conversation: str, request: Request) -> GatewayConversation:
    agent = key.agent
    # The last thing the person asked: clients put their own notes (Codex's environment
    # context, Claude Code's reminders around it) or worked examples (aider's) before it.
    asked = next((text for m in reversed(request.messages)
                  if m.role == "user" and (text := HARNESS_NOTE.sub("", m.text).strip())), "")
    objective = (asked.strip() or "(a conversation through the gateway endpoint)")[:OBJECTIVE_MAX]
    title = " ".join(objective.split())
    title = title if len(title) <= TITLE_MAX else title[:TITLE_MAX - 1] + "…"
    task = Task.objects.create(room_id=key.room_id, title=title, objective=objective, created_by=key.created_by)
    now = timezone.now()
    session = Session.objects.create(
        task=task, agent=agent, model=agent.model, origin=Session.Origin.ENDPOINT, state=states.RUNNING,
        started_at=now, created_by=key.created_by, time_limit_seconds=settings.ATRIUM_SESSION_TIME_LIMIT_SECONDS,
    )
    session_event_append(session, "session.state_changed", {"state": states.RUNNING, "attempt": 1,
                                                            "retry_of": None, "via": f"gateway key {key.name}"})
    return GatewayConversation.objects.create(key=key, conversation=conversation, session=session)


def _ended(session: Session) -> WireError:
    why = f" ({session.reason})" if session.reason else ""
    word = "cancelled" if session.state == states.CANCELLED else f"ended ({session.state})"
    return WireError(f"This conversation's session {session.pk} was {word} in the room{why}. Start a new "
                     "conversation (or send a new X-Atrium-Session) to go on.", status=409,
                     kind="invalid_request_error", code="session_ended")


def _context(session: Session, request: Request) -> tuple[SessionContext, StateJournal]:
    """The session's gateway state as the last request left it (as the worker restores
    it), under the client's current system prompt, tools and output limit: the context
    this process kept from that request, else restored from the saved state."""
    agent = session.agent
    settings_now: dict[str, Any] = {
        "system_prompt": request.system, "tools": request.tools,
        "budget": Budget(window=agent.context_window, **settings.ATRIUM_FOLD_OVERRIDES,
                         output_budget=output_reserved(request.max_tokens, model=agent.model,
                                                       window=agent.context_window, budget=agent.output_budget)),
        "calibration": calibration_load(agent.model),
        "economics": CacheEconomics.of(agent.price_for(agent.model)),
        "length_prior": LengthPrior.of(session_lengths(agent, session.model or agent.model)),
    }
    kept = CONTEXTS.take(session.pk)
    if kept is not None and (kept.model, kept.policy) == (agent.model, agent.eviction_policy) \
            and kept.seq == session.state_seq:
        return reuse_state(kept.ctx, **settings_now), kept.journal
    common = {**settings_now, "model": agent.model, "policy": agent.eviction_policy}
    stored = gateway_state_read(session)
    if stored is None:
        return SessionContext(**common), StateJournal()
    shas = {o["source"]["sha256"] for o in stored.state["observations"]}
    ctx = load_state(stored.state, texts=blob_texts(shas), **common)
    return ctx, stored.journal_for(ctx)


def _unit(session: Session, talk: GatewayConversation, request: Request, digests: list[str],
          on_delta: DeltaSink | None) -> tuple[ModelTurn | None, WireError | None]:
    """One request as one unit of the session (``digests``: its messages'); called
    holding the conversation's row lock."""
    ctx, journal = _context(session, request)
    events: list[tuple[str, dict[str, Any]]] = []
    taken = take(ctx, talk.digests, request, digests)
    if taken.diverged_at is not None:
        opened = ctx.segment_log[-1]
        events.append(("segment.started", {"segment": ctx.segment, "step": ctx.step, "reason": opened["reason"],
                                           "prose": "client", "archived": len(opened["archived"]), "sizes": {},
                                           "handoff_bytes": 0, "handoff_tokens": 0, "handoff": ""}))
    results = []
    for obs_id in taken.observations:
        obs = ctx.observation(obs_id)
        if obs is not None:
            result = {"step": ctx.step, "call_id": obs.call_id, "tool": obs.source.tool,
                      "purpose": obs.source.purpose, "is_error": False, "served": "",
                      "tokens": obs.source.tokens, "preview": obs.source.text[:400]}
            results.append((result, obs))
            events.append(("tool.result", result))
            events.extend((FILE_CHANGED, change) for change in changed_by(ctx, obs))
    # Steers, chat that mentions the agent, other agents' posts: as a worker's boundary takes them.
    runtime = RuntimeState.from_dict(session.runtime_state)
    taken_inputs = inputs.pending_inputs(session, chat_after=runtime.chat_cursor)
    person = deliver_inputs(ctx, taken_inputs, lambda kind, payload: events.append((kind, payload)))
    runtime.chat_cursor = chat_cursor_after(runtime.chat_cursor, taken_inputs)
    agent = session.agent
    provider = _provider(agent.model, agent.api_key, agent.base_url, agent.timeouts)
    exchange = Exchange(ctx, _Host(provider, events), max_tokens=request.max_tokens, params=request.params,
                        person_waiting=person, on_delta=on_delta)
    turn: ModelTurn | None = None
    failure: WireError | None = None
    try:
        completion = exchange.run()
        turn = completion.turn
        record = completion.record
        events.append(("model.reply", {
            "step": ctx.step + 1, "text": turn.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls],
            "input_tokens": record.input_tokens, "cached_input_tokens": record.cached_input_tokens,
            "output_tokens": record.output_tokens, "model": record.model,
        }))
    except ContextTooLarge as exc:
        failure = WireError(f"The request is longer than the model's context window, even folded: {exc}",
                            code="context_length_exceeded")
    except ProviderError as exc:  # an overflow after the folded retry too
        failure = provider_failure(exc, trusted=profile_endpoint(agent).trusted)
    for result, obs in results:
        # Known only now: a fold of this request serves a note's text after all.
        result["served"] = "note" if obs.alias_of is not None else "text"
    # No savepoint inside the request's transaction (PostgreSQL's; SQLite's file lock holds
    # none): nothing is retried within it, and each savepoint was two round trips.
    with transaction.atomic(savepoint=False):
        if taken.closed is not None:
            history_record(session=session, segment=taken.closed[0], items=taken.closed[1])
        _save(session, talk, digests, ctx, journal, exchange, events, turn=turn, runtime=runtime,
              delivered=[i.id for i in taken_inputs if i.kind == "steer"],
              delivered_mentions=tuple(i.id for i in taken_inputs if i.kind == "agent"))
        kept = Kept(ctx, journal, agent.model, agent.eviction_policy)
        transaction.on_commit(lambda: CONTEXTS.keep(session.pk, kept))
    return turn, failure


def _provider(model: str, api_key: str, base_url: str, timeouts: Timeouts = DEFAULT_TIMEOUTS) -> Any:
    """The profile's provider, no retries of ours (the client's SDK retries as it would
    against the provider), within the profile's limits."""
    return _PROVIDERS.get((model, api_key, base_url, timeouts), lambda: provider_for(
        model, api_key=api_key or None, base_url=base_url or None, timeouts=timeouts,
        policy=RetryPolicy(max_attempts=1)))


def _save(session: Session, talk: GatewayConversation, digests: list[str], ctx: SessionContext,
          journal: StateJournal, exchange: Exchange, events: list[tuple[str, dict[str, Any]]],
          *, turn: ModelTurn | None, runtime: RuntimeState, delivered: list[int],
          delivered_mentions: tuple[int, ...]) -> None:
    """The unit's records, as a worker's commit writes them; the client's history as
    this request held it, for the next one to be compared with."""
    saved = journal.record(ctx)
    gateway_state_save(session=session, record=saved)
    fields = ["step", "tokens_input", "tokens_cached", "tokens_output"]
    if (runtime_state := runtime.to_dict()) != session.runtime_state:
        session.runtime_state = runtime_state
        fields.append("runtime_state")
    if saved.decisions_changed:
        session.decisions = ctx.decisions.to_json()
        fields.append("decisions")
    unit_records_save(session=session, ctx=ctx, touched=saved.touched, fields=fields, call_records=exchange.records,
                      events=events)
    if (closed := exchange.segments.take_closed()) is not None:
        history_record(session=session, segment=closed[0], items=closed[1])
    if delivered:  # an empty filter is no statement, but building it costs a request ~1 ms
        for message in Message.objects.filter(pk__in=delivered):
            message_mark_delivered(message=message)
    agent_mentions_mark_delivered(session=session, message_ids=delivered_mentions)
    talk.digests = digests
    talk.requests += 1
    fields = ["digests", "requests", "updated_at"]
    if turn is not None:
        talk.last_answer = answer_digest(turn)
        rows_insert(GatewayAnswer, [GatewayAnswer(key_id=talk.key_id, conversation=talk, digest=talk.last_answer)])
        fields.append("last_answer")
    talk.save(update_fields=fields)
