"""A small cache of SDK clients and providers by endpoint, shared by a process's requests.

Building one costs tens of milliseconds of CPU (its SDK client's SSL context), which would
hold up every request in the process; a kept one also keeps its connections. At most
``size`` are kept, the oldest made leaving first."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    def __init__(self, size: int, *, on_drop: Callable[[V], object] = lambda value: None) -> None:
        self.size, self.on_drop = size, on_drop
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V], *, usable: Callable[[V], bool] = lambda value: True) -> V:
        """The value kept for ``key``, or a new one from ``make`` when there is none or the
        kept one is not ``usable``."""
        with self._lock:
            value = self._values.get(key)
            if value is not None and usable(value):
                return value
            self._values.pop(key, None)
            while len(self._values) >= self.size:
                self.on_drop(self._values.pop(next(iter(self._values))))
            value = self._values[key] = make()
            return value

    def __len__(self) -> int:
        return len(self._values)
