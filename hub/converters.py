"""``<id:...>`` in URLs: a row id the database can hold (1 … 2^63−1). Anything else is
no match, so an out-of-range id is a 404, never an overflow in the database driver."""

from __future__ import annotations

MAX_ID = 2**63 - 1  # BigAutoField / PositiveBigIntegerField


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 1 <= number <= MAX_ID:
            raise ValueError(f"{value} is not a row id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
