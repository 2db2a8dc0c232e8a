"""The bounded cache of SDK clients and providers (endpoint/cache.py)."""

from __future__ import annotations

import threading

from endpoint.cache import BoundedCache


def test_a_value_is_made_once_per_key_and_the_oldest_leaves_a_full_cache():
    dropped: list[str] = []
    cache: BoundedCache[str] = BoundedCache(2, on_drop=dropped.append)
    made: list[str] = []

    def make(name: str):
        return lambda: made.append(name) or name

    assert cache.get("a", make("a")) == "a" and cache.get("a", make("a2")) == "a"
    cache.get("b", make("b"))
    cache.get("c", make("c"))
    assert made == ["a", "b", "c"] and dropped == ["a"] and len(cache) == 2
    assert cache.get("a", make("a3")) == "a3" and dropped == ["a", "b"]


def test_a_kept_value_that_is_not_usable_is_made_again():
    cache: BoundedCache[list] = BoundedCache(4)
    first = cache.get("k", lambda: ["first"])
    again = cache.get("k", lambda: ["second"], usable=lambda value: value is not first)
    assert again == ["second"] and cache.get("k", lambda: ["third"]) is again and len(cache) == 1


def test_threads_asking_for_one_key_at_once_get_one_value():
    cache: BoundedCache[object] = BoundedCache(4)
    start, values = threading.Barrier(8), []

    def ask():
        start.wait()
        values.append(cache.get("k", object))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(v) for v in values}) == 1
