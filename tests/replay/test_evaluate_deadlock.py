"""The deadlock counter: re-reads after eviction, and denied re-reads."""

from __future__ import annotations

from observations.replay.eval.cost import CostModel
from observations.replay.eval.engine import ReplaySettings, replay
from observations.replay.eval.reads import covers
from observations.replay.trajectory import FileAccess
from tests.replay.test_evaluate_factories import (
    CONFIG,
    edit_event,
    file_text,
    read_event,
    rereads_config,
    trajectory,
)

BIG = 128_000


def test_eager_with_room_dedup_denies_the_reread_the_deadlock():
    run = replay(rereads_config(attempts=3), "eager-room-dedup", BIG)
    # config.py was evicted by the eager rule before the agent asked for it again, and
    # every answer to the re-read was "already read": the text never came back.
    assert run.rereads_after_eviction == 3
    assert run.denied_rereads == 3


def test_eager_alone_rereads_after_eviction_but_gets_the_text():
    run = replay(rereads_config(attempts=3), "eager", BIG)
    assert run.rereads_after_eviction == 1  # the first re-read brings the text back
    assert run.denied_rereads == 0


def test_on_demand_keeps_what_is_read_again_while_no_fold_pays():
    # With reads from the cache free, no fold pays: the first read stays in the request,
    # and the re-reads are notes pointing at it.
    free_reads = ReplaySettings(decide_with=CostModel(cache_read=0.0, cache_write=1.25))
    run = replay(rereads_config(attempts=3), "on_demand", BIG, free_reads)
    assert run.folds == []
    assert run.rereads_after_eviction == 0
    assert run.denied_rereads == 0


def test_on_demand_after_a_fold_serves_the_reread_whole_never_denied():
    # A small window forces a fold that takes config.py out; the re-read must get text.
    reads = rereads_config(others=12, attempts=3)
    run = replay(reads, "on_demand", 16_000)
    assert run.folds and not run.failed
    assert run.rereads_after_eviction >= 1
    assert run.denied_rereads == 0


def test_mask_last_5_stubs_count_as_eviction():
    run = replay(rereads_config(others=6, attempts=1), "mask-last-5", BIG)
    assert run.rereads_after_eviction == 1
    assert run.denied_rereads == 0


def test_a_read_after_the_file_was_edited_is_not_a_reread():
    changed = file_text("src/config.py", 120, version=1)
    events = [read_event("c0", "src/config.py", CONFIG)]
    events += [
        read_event(f"o{n}", f"src/other{n}.py", file_text(f"src/other{n}.py", 120))
        for n in range(4)
    ]
    events += [edit_event("e0", "src/config.py"), read_event("c1", "src/config.py", changed)]
    run = replay(trajectory(events), "eager-room-dedup", BIG)
    assert run.rereads_after_eviction == 0
    assert run.denied_rereads == 0


def test_the_same_content_hash_counts_as_unchanged_even_after_an_edit():
    events = [read_event("c0", "src/config.py", CONFIG)]
    events += [
        read_event(f"o{n}", f"src/other{n}.py", file_text(f"src/other{n}.py", 120))
        for n in range(4)
    ]
    events += [edit_event("e0", "src/config.py"), read_event("c1", "src/config.py", CONFIG)]
    run = replay(trajectory(events), "eager", BIG)
    assert run.rereads_after_eviction == 1


def test_a_range_still_covered_by_text_in_the_request_is_not_a_reread():
    # Lines 1-120 stay in context (no eviction), lines 10-20 are read: nothing was lost.
    events = [
        read_event("c0", "src/config.py", CONFIG),
        read_event("c1", "src/config.py", "x\n", 10, 20),
    ]
    run = replay(trajectory(events), "none", BIG)
    assert run.rereads_after_eviction == 0


class TestCovers:
    def test_whole_file_covers_any_range(self):
        assert covers(FileAccess("read", "a"), FileAccess("read", "a", 5, 9))

    def test_a_range_does_not_cover_the_whole_file(self):
        assert not covers(FileAccess("read", "a", 1, 50), FileAccess("read", "a"))

    def test_bounded_ranges(self):
        assert covers(FileAccess("read", "a", 1, 50), FileAccess("read", "a", 10, 20))
        assert not covers(FileAccess("read", "a", 1, 50), FileAccess("read", "a", 40, 60))

    def test_open_ended_range_covers_what_starts_after_it(self):
        assert covers(FileAccess("read", "a", 10, None), FileAccess("read", "a", 20, 30))

    def test_tails(self):
        assert covers(FileAccess("read", "a", -50), FileAccess("read", "a", -10))
        assert not covers(FileAccess("read", "a", -10), FileAccess("read", "a", -50))
        assert not covers(FileAccess("read", "a", -10), FileAccess("read", "a", 1, 5))

    def test_other_paths_never(self):
        assert not covers(FileAccess("read", "a"), FileAccess("read", "b"))
