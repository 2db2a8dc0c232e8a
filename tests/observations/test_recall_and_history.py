"""`recall` and `history_search` against the database: a session sees only what it
received itself, whatever the room's shared store holds."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model

from agents.models import AgentProfile
from agents.tools.memory import AmbiguousRef, history_search, recall
from agents.tools.outcome import ToolError
from observations.blobs import blob_put
from observations.gateway.segments import HistoryItem
from rooms.models import Room
from sessions.ledger.history import history_record
from sessions.models import HistoryEntry, Observation, Payload, Segment, Session, Task
from sessions.worker.memory import DatabaseMemory


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def sessions(db, tmp_path):
    owner = get_user_model().objects.create_user("ann", password="pw-ann-12345")
    agent = AgentProfile.objects.create(name="a", model="replay:demo-fix-median.json")

    def session_in(room: Room) -> Session:
        task = Task.objects.create(room=room, title="t", objective="o", created_by=owner)
        return Session.objects.create(task=task, agent=agent)

    room = Room.objects.create(name="R", slug="r", repo_path=str(tmp_path / "r"), owner=owner)
    other_room = Room.objects.create(name="S", slug="s", repo_path=str(tmp_path / "s"), owner=owner)
    return session_in(room), session_in(room), session_in(other_room)


def observe(session: Session, seq: int, text: str, *, tool: str = "shell", purpose: str = "shell: make") -> str:
    blob = blob_put(text)
    Observation.objects.create(room=session.task.room, session=session, seq=seq, step=seq, call_id=f"c{seq}",
                               tool=tool, arguments={}, args_key="k", purpose=purpose, blob=blob,
                               size=len(text), token_estimate=1)
    return blob.sha256


def test_a_session_recalls_the_exact_bytes_it_received_by_the_ref_its_receipt_shows(sessions):
    mine, _, _ = sessions
    text = "<returncode>1</returncode>\nFAILED test_a\n  trailing spaces   \n\tand a tab\n"
    digest = observe(mine, 0, text)
    result = recall(DatabaseMemory(mine.pk), ref=digest[:12], start_line=None, end_line=None)
    assert result.text == text  # exact, no header added
    assert result.path == f"recall:{digest[:12]}" and result.range_sha256 == digest


def test_a_part_of_a_long_text_comes_with_where_it_is(sessions):
    mine, _, _ = sessions
    text = "".join(f"line {n}\n" for n in range(1, 101))
    digest = observe(mine, 0, text)
    result = recall(DatabaseMemory(mine.pk), ref=digest[:12], start_line=10, end_line=12)
    assert result.text == f"[recall {digest[:12]}: lines 10-12 of 100; recall(\"{digest[:12]}\", start_line=13) for the rest]\nline 10\nline 11\nline 12\n"
    with pytest.raises(ToolError, match="past the end"):
        recall(DatabaseMemory(mine.pk), ref=digest[:12], start_line=500, end_line=None)


def test_another_sessions_or_another_rooms_observation_is_refused(sessions):
    mine, neighbour, stranger = sessions
    theirs = observe(neighbour, 0, "the neighbour's secret build log\n")
    foreign = observe(stranger, 0, "another room's file\n")
    for ref in (theirs[:12], foreign[:12], theirs):
        with pytest.raises(ToolError, match="received nothing with ref"):
            recall(DatabaseMemory(mine.pk), ref=ref, start_line=None, end_line=None)
    # Once the session received the same bytes itself, the shared blob is its to recall.
    observe(mine, 0, "the neighbour's secret build log\n")
    assert recall(DatabaseMemory(mine.pk), ref=theirs[:12], start_line=None, end_line=None).text.startswith("the neighbour")


def test_a_body_the_agent_wrote_is_recallable_by_its_payload_ref(sessions):
    mine, _, _ = sessions
    body = "def parse(x):\n    return x\n" * 30
    blob = blob_put(body)
    Payload.objects.create(room=mine.task.room, session=mine, pid=0, step=3, what="file body", path="p.py",
                           blob=blob, size=len(body))
    result = recall(DatabaseMemory(mine.pk), ref=sha(body)[:12], start_line=None, end_line=None)
    assert result.text == body and "file body of p.py" in result.purpose


def test_refs_are_checked(sessions):
    mine, _, _ = sessions
    with pytest.raises(ToolError, match="is not a ref"):
        recall(DatabaseMemory(mine.pk), ref="../../etc/passwd", start_line=None, end_line=None)
    one, two = texts_sharing_a_six_digit_ref()
    a, b = observe(mine, 0, one), observe(mine, 1, two)
    assert a[:6] == b[:6] and a[:12] != b[:12]
    with pytest.raises(AmbiguousRef):
        recall(DatabaseMemory(mine.pk), ref=a[:6], start_line=None, end_line=None)
    assert recall(DatabaseMemory(mine.pk), ref=a[:12], start_line=None, end_line=None).text == one


def texts_sharing_a_six_digit_ref() -> tuple[str, str]:
    """Two texts whose digests start alike (a birthday search: a few thousand tries)."""
    seen: dict[str, str] = {}
    for n in range(1_000_000):
        text = f"output {n}\n"
        prefix = sha(text)[:6]
        if prefix in seen:
            return seen[prefix], text
        seen[prefix] = text
    raise AssertionError("no two digests share six hex digits")


def test_a_single_line_longer_than_a_result_comes_cut_and_says_so(sessions):
    mine, _, _ = sessions
    text = "x" * 250_000 + "\n" + "second\n"
    digest = observe(mine, 0, text)
    result = recall(DatabaseMemory(mine.pk), ref=digest[:12], start_line=None, end_line=None)
    header, served = result.text.split("\n", 1)
    assert "line 1 is 250,001 bytes, cut at 100,000" in header and "start_line=2" in header
    assert served == "x" * 100_000
    assert recall(DatabaseMemory(mine.pk), ref=digest[:12], start_line=2, end_line=None).text.endswith("second\n")


def test_history_search_finds_earlier_segments_of_this_session_only(sessions):
    mine, neighbour, _ = sessions
    assert "no earlier segments" in history_search(DatabaseMemory(mine.pk), query="median", limit=5).text
    Segment.objects.create(session=mine, number=2, started_step=9, reason="full", prose_source="model",
                           handoff="h", handoff_bytes=1, handoff_tokens=1)
    history_record(session=mine, segment=1, items=[
        HistoryItem(3, "result", "result of read_file stats.py", "abcdef123456", "def median(values):\n    return 0\n"),
        HistoryItem(4, "reply", "your reply", "", "The mean is fine; the median is wrong for even lengths."),
        HistoryItem(5, "steer", "a person's steer", "", "use statistics.median"),
    ])
    Segment.objects.create(session=neighbour, number=2, started_step=1, reason="full", prose_source="model",
                           handoff="h", handoff_bytes=1, handoff_tokens=1)
    history_record(session=neighbour, segment=1, items=[
        HistoryItem(1, "reply", "your reply", "", "median median median of the neighbour")])

    text = history_search(DatabaseMemory(mine.pk), query="median even", limit=5).text
    assert "segment 1, step 4, your reply" in text and "neighbour" not in text
    text = history_search(DatabaseMemory(mine.pk), query="median", limit=5).text
    assert 'recall("abcdef123456")' in text and "«median»" in text
    # Query syntax of the engine is taken literally, never an error.
    assert "No match" in history_search(DatabaseMemory(mine.pk), query='"NEAR(* AND', limit=5).text


def test_a_result_larger_than_a_search_index_holds_is_recorded_and_found_by_its_start_and_end(sessions):
    """PostgreSQL's tsvector holds at most 1 MB: a 5 MB build log must still end its segment."""
    mine, _, _ = sessions
    Segment.objects.create(session=mine, number=2, started_step=9, reason="full", prose_source="model",
                           handoff="h", handoff_bytes=1, handoff_tokens=1)
    log = "collecting zanzibar\n" + "".join(f"test_{n} PASSED word{n}\n" for n in range(200_000)) + "1 failed quokka\n"
    assert len(log) > 5_000_000
    history_record(session=mine, segment=1, items=[HistoryItem(3, "result", "result of shell: pytest", "abcdef123456",
                                                               log)])
    assert HistoryEntry.objects.get(session=mine).text == log  # kept whole; only search sees a part
    for word in ("zanzibar", "quokka"):
        assert 'recall("abcdef123456")' in history_search(DatabaseMemory(mine.pk), query=word, limit=5).text
