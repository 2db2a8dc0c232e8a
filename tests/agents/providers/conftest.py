from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agents.providers.wire_server import RefusingEndpoint, WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


@pytest.fixture
def refusing() -> Iterator[RefusingEndpoint]:
    endpoint = RefusingEndpoint()
    yield endpoint
    endpoint.close()


class RecordingSleep:
    """Injected instead of time.sleep: records the delays, sleeps not at all."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()
