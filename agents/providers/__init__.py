"""Model providers for the agent runtime.

The step loop calls ``provider_for(spec, ...)`` once per session and then
``provider.call(request)`` per step, which returns a ``Completion(turn, record)`` or
raises a ``ProviderError`` whose ``.record`` is set. No Django import here: settings
arrive as arguments or from the environment.
"""

from __future__ import annotations

from agents.providers.base import Provider
from agents.providers.errors import (
    ConnectionFailed,
    ContextOverflow,
    InvalidModelSpec,
    ProviderError,
    Rejected,
    StreamAbandoned,
    Transient,
)
from agents.providers.factory import (
    ModelEndpoint,
    ModelSpec,
    build_provider,
    parse_fallbacks,
    parse_spec,
    provider_for,
)
from agents.providers.records import CallRecord, Completion, prefix_hash
from agents.providers.replay import DEFAULT_REPLAY_DIR, ReplayProvider
from agents.providers.resilience import ResilientProvider, RetryPolicy
from agents.providers.toolcalls import MALFORMED_ARGUMENTS_KEY, arguments_are_malformed

__all__ = [
    "DEFAULT_REPLAY_DIR",
    "MALFORMED_ARGUMENTS_KEY",
    "CallRecord",
    "Completion",
    "ConnectionFailed",
    "ContextOverflow",
    "InvalidModelSpec",
    "ModelEndpoint",
    "ModelSpec",
    "Provider",
    "ProviderError",
    "Rejected",
    "ReplayProvider",
    "ResilientProvider",
    "RetryPolicy",
    "StreamAbandoned",
    "Transient",
    "arguments_are_malformed",
    "build_provider",
    "parse_fallbacks",
    "parse_spec",
    "prefix_hash",
    "provider_for",
]
