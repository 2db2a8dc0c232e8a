from __future__ import annotations

import pytest

from observations.blob_store import blob_store
from observations.blobs import _RecentTexts, blob_put, blob_text, blob_texts, sha256_text
from observations.models import Blob


@pytest.mark.django_db
def test_the_same_bytes_are_stored_once():
    first = blob_put("hello\nworld\n")
    second = blob_put("hello\nworld\n")
    assert first.sha256 == second.sha256 == sha256_text("hello\nworld\n")
    assert Blob.objects.count() == 1
    assert first.first_line == "hello" and first.size == 12 and first.token_estimate > 0


@pytest.mark.django_db
def test_large_results_go_to_a_file_named_by_their_hash(settings, tmp_path):
    settings.BLOBS_DIR = tmp_path / "blobs"
    settings.BLOB_INLINE_MAX = 1_000
    text = "x = 1\n" * 1_000
    blob = blob_put(text)
    assert blob.in_file and blob.data is None
    assert blob_store().path(blob.sha256).read_text() == text
    assert blob_text(Blob.objects.get(pk=blob.pk)) == text
    assert not list((tmp_path / "blobs").rglob(".tmp-*"))


@pytest.mark.django_db
def test_text_round_trips_exactly_including_odd_characters():
    text = "naïve — ☃\r\n\ttab\x00nul"
    assert blob_text(Blob.objects.get(pk=blob_put(text).pk)) == text


@pytest.mark.django_db
def test_texts_read_lately_come_from_memory_and_the_least_recent_leave_past_the_budget(django_assert_num_queries):
    texts = {blob_put(f"result {n}\n" * 50).sha256: f"result {n}\n" * 50 for n in range(3)}
    with django_assert_num_queries(1):
        assert blob_texts(set(texts)) == texts
    with django_assert_num_queries(0):
        assert blob_texts(set(texts)) == texts
    recent = _RecentTexts(budget=10)
    recent.put_many({"a": "12345", "b": "12345"})
    recent.get_many({"a"})  # "b" is now the least recent
    recent.put_many({"c": "123"})
    assert recent.get_many({"a", "b", "c"}) == {"a": "12345", "c": "123"} and recent.size == 8
