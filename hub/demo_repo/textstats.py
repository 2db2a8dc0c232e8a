"""Small statistics over word lengths."""

from __future__ import annotations


def word_lengths(text: str) -> list[int]:
    return [len(word) for word in text.split()]


def mean(values: list[int]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values: list[int]) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
