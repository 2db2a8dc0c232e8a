"""Writes and reads of the eval ledger (evals/models.py)."""

from __future__ import annotations

from django.db import transaction

from evals.compare import RunFacts, Verdict, compare
from evals.models import EvalBatch, EvalRun, EvalVerdict


def run_facts(batch: EvalBatch) -> list[RunFacts]:
    return [
        RunFacts(scenario=r.scenario, version=r.scenario_version, model=r.model, scripted=batch.scripted,
                 state=r.state, passed=r.request_passed + r.behaviour_passed,
                 total=r.request_total + r.behaviour_total)
        for r in EvalRun.objects.filter(batch=batch)
    ]


@transaction.atomic
def eval_compare(*, a: EvalBatch, b: EvalBatch) -> list[EvalVerdict]:
    """Line two batches up by scenario, label each, store the verdicts."""
    return [
        EvalVerdict.objects.create(source="eval", a_label=f"eval #{a.pk} ({a.model})",
                                   b_label=f"eval #{b.pk} ({b.model})", a_batch=a, b_batch=b,
                                   subject=v.subject, verdict=v.verdict, detail=v.detail)
        for v in compare(run_facts(a), run_facts(b))
    ]


@transaction.atomic
def verdicts_store(*, source: str, a_label: str, b_label: str, verdicts: list[Verdict]) -> list[EvalVerdict]:
    """Verdicts from elsewhere (``replay compare``) into the same ledger."""
    return [EvalVerdict.objects.create(source=source, a_label=a_label[:300], b_label=b_label[:300],
                                       subject=v.subject[:300], verdict=v.verdict, detail=v.detail)
            for v in verdicts]


def store_replay_verdicts(sender, *, a_label: str, b_label: str, verdicts: list[tuple[str, str, str]],
                          **kwargs) -> int:
    """Receiver of observations.signals.replay_compared: ``replay compare``'s verdicts."""
    stored = verdicts_store(source="replay", a_label=a_label, b_label=b_label,
                            verdicts=[Verdict(subject, label, reason) for subject, label, reason in verdicts])
    return len(stored)
