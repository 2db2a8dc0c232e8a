"""One table of eviction policies (observations.gateway.policies.POLICIES): the live hub,
the replay and the agent profile's choices read the same row, so a new policy is one
class and one row, and is served the same way live and in the replay (the replay once
served every policy it did not know without the ledger's short notes)."""

from __future__ import annotations

import pytest

from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.policies import POLICIES, Plan, PolicyRow
from observations.replay.eval.engine import new_context, replay
from tests.gateway.factories import TOOLS, read_input
from tests.replay.test_evaluate_factories import CONFIG, rereads_config

BUDGET = Budget(window=128_000, output_budget=4_096)


class KeepAll:
    """A policy nobody wrote the replay for: it folds nothing."""

    name = "keep-all"
    manages_window = False

    def plan(self, view, *, person_waiting: bool, overflow: bool) -> Plan:
        return Plan(note="keeps everything")


@pytest.fixture
def keep_all(monkeypatch):
    monkeypatch.setitem(POLICIES, KeepAll.name, PolicyRow(KeepAll, None))
    return KeepAll.name


def live(policy: str) -> SessionContext:
    return SessionContext(model="test:model", system_prompt="You are a careful coding agent.", tools=TOOLS,
                          budget=BUDGET, policy=policy)


def test_every_row_is_served_alike_live_and_in_the_replay(keep_all):
    for name in POLICIES:
        assert new_context(rereads_config(), name, BUDGET).serving == live(name).serving, name


def test_a_new_policy_gets_the_ledgers_notes_in_the_replay_as_live(keep_all):
    ctx = live(keep_all)
    ctx.add_user("Fix the config loader.", kind="task")
    for call_id in ("c0", "c1"):
        ctx.prepare()
        ctx.add_assistant("reading config", ())
        second = ctx.add_tool_result(read_input(call_id, "src/config.py", CONFIG))
    assert second.alias_of == 0  # live: the unchanged re-read is a short note

    # The replay of the same kind of run: the re-reads are notes there too, so it sends
    # less than the baseline that serves every result whole, and no fold did it.
    replayed, whole = replay(rereads_config(), keep_all, 128_000), replay(rereads_config(), "none", 128_000)
    assert replayed.folds == [] and sum(replayed.sent) < sum(whole.sent)


def test_the_profile_form_offers_the_rows_it_labels():
    from agents.models import AgentProfile

    field = AgentProfile._meta.get_field("eviction_policy")
    assert [value for value, _ in field.choices] == ["on_demand", "none", "eager"]
    assert field.default == "on_demand"
