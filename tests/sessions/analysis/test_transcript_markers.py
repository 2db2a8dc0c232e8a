"""The transcript's markers between the model's steps, from the events alone."""

from __future__ import annotations

from sessions.analysis.facts import Event, SessionFacts
from sessions.analysis.transcript import render_transcript


def test_a_fold_says_what_it_receipted_and_which_re_reads_it_served_as_text():
    fold = {"number": 2, "step": 7, "epoch": 2, "reason": "cost", "projection_before": 26_000,
            "projection_after": 9_000, "evicted": [3, 4, 5], "tokens_freed": 17_000, "revived": [6]}
    text = render_transcript(SessionFacts(session_id=1, title="t", agent="a", model="m", state="running",
                                          events=(Event(1, "fold", fold), Event(2, "fold", {**fold, "revived": []}))))
    assert ("> **Fold #2** at step 7 (cost): 26,000 → 9,000 tokens, 3 results receipted, 17,000 tokens freed; "
            "1 re-read served as text instead of a note") in text
    assert text.count("served as text") == 1
