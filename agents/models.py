"""Agent profiles: a name, a role prompt, a model with its fallbacks, a context window, an
output budget, prices and timeouts."""

from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from agents.providers.timeouts import Timeouts

# The eval ledger (evals/); imported here so the app registers them.
from observations.gateway.model_spec import ModelSpecError, parse_model_spec
from observations.gateway.policies import ON_DEMAND, profile_choices
from observations.gateway.prices import ModelPrice, price_for


def validate_model_spec(value: str) -> None:
    """``openai:<model>``, ``anthropic:<model>`` or ``replay:<file>``, as
    observations.gateway.model_spec reads it, said in the form's words."""
    try:
        parse_model_spec(value)
    except ModelSpecError as exc:
        if exc.code == "path":
            raise ValidationError(
                "%(value)r: a replay: model names a file in the hub's replay folder (e.g. "
                "replay:demo-fix-median.json), not a path.",
                params={"value": value},
                code="replay_path",
            ) from None
        raise ValidationError(
            "%(value)r is not a model spec: write openai:<model>, anthropic:<model> or replay:<file>.",
            params={"value": value},
            code="model_spec",
        ) from None


def validate_model_spec_list(value: str) -> None:
    for spec in (part.strip() for part in value.split(",")):
        if spec:
            validate_model_spec(spec)


def _price_field(what: str) -> models.DecimalField:
    return models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(0)],
        help_text=f"USD per million {what} tokens; blank uses the published list price.",
    )


class AgentProfile(models.Model):
    name = models.CharField(max_length=80, unique=True)
    role_prompt = models.TextField(blank=True)
    model = models.CharField(
        max_length=200,
        validators=[validate_model_spec],
        help_text="openai:<model>, anthropic:<model> or replay:<file>, e.g. anthropic:claude-sonnet-4-5.",
    )
    context_window = models.PositiveIntegerField(
        default=128_000, validators=[MinValueValidator(1024)], help_text="Tokens the model accepts per request."
    )
    output_budget = models.PositiveIntegerField(
        default=8_000, validators=[MinValueValidator(1)], help_text="Tokens reserved for each reply."
    )
    eviction_policy = models.CharField(
        max_length=20, choices=profile_choices(), default=ON_DEMAND
    )
    # Store every request sent to the model (its bytes as a blob, per ProviderCall):
    # evals read back what the model was sent. Off by default: long sessions are large.
    record_requests = models.BooleanField(default=False)
    # Tool names this agent may call; empty means every tool.
    allowed_tools = models.JSONField(default=list, blank=True)
    # Optional per-agent provider settings; keys fall back to the environment.
    base_url = models.CharField(max_length=300, blank=True)
    api_key = models.CharField(max_length=300, blank=True)
    fallback_models = models.CharField(
        max_length=500, blank=True, validators=[validate_model_spec_list], help_text="Comma-separated model specs."
    )
    # How long a call of its model may take (agents.providers.Timeouts): a hung provider
    # holds a worker for no longer than the whole call's limit, retries included.
    connect_timeout_seconds = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1)], help_text="Seconds to connect to the provider.")
    answer_timeout_seconds = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(1)],
        help_text="Seconds one request may wait for the answer to start arriving (then it is retried).")
    call_timeout_seconds = models.PositiveIntegerField(
        default=900, validators=[MinValueValidator(1)],
        help_text="Seconds one model call may take in all, its retries included (then the session fails).")
    # Own prices for this agent's model, USD per million tokens; blank takes the hub's
    # price table (observations/gateway/prices.py). Fallback models always use the table.
    price_input = _price_field("input")
    price_cached_input = _price_field("cached input (a cache read)")
    price_cache_write = _price_field("cache write")
    price_output = _price_field("output (reasoning included)")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(connect=self.connect_timeout_seconds, answer=self.answer_timeout_seconds,
                        call=self.call_timeout_seconds)

    def clean(self) -> None:
        if self.call_timeout_seconds and self.answer_timeout_seconds \
                and self.call_timeout_seconds < self.answer_timeout_seconds:
            raise ValidationError({"call_timeout_seconds": "The whole call's limit must be at least the answer's."})
        if self.context_window and self.output_budget and self.output_budget >= self.context_window:
            raise ValidationError({"output_budget": "The output budget must be smaller than the context window."})
        if self.context_window and self.output_budget:
            from agents.prompts import WORKING_ROOM_TOKENS, fixed_prompt_tokens

            fixed = fixed_prompt_tokens(role_prompt=self.role_prompt or "")
            needed = fixed + self.output_budget + WORKING_ROOM_TOKENS
            if self.context_window < needed:
                # Every session of such a profile would stop at its first request.
                raise ValidationError({"context_window": (
                    f"A window of {self.context_window:,} tokens cannot hold this agent's fixed prompt (about "
                    f"{fixed:,} tokens: its instructions and tool definitions), its output budget "
                    f"({self.output_budget:,}) and room to work ({WORKING_ROOM_TOKENS:,}): give it at least "
                    f"{needed:,}, or a smaller output budget.")})
        if self.base_url:
            from agents.providers.addresses import AddressRefused, allowed_from, check_base_url

            try:
                check_base_url(self.base_url, allowed_from(os.environ))
            except AddressRefused as exc:
                raise ValidationError({"base_url": str(exc)}) from None
        # The gateway's fold economics need a cache read no dearer than input, and a
        # cache write no cheaper than a read (observations/gateway/economics.py).
        price = self.price_for(self.model) if self.model else None
        if price is not None and price.input:
            if price.cached_input is not None and price.cached_input > price.input:
                raise ValidationError({"price_cached_input": "A cached input token cannot cost more than an input one."})
            if price.cache_write is not None and price.cache_write < (price.cached_input or 0):
                raise ValidationError({"price_cache_write": "A cache write cannot cost less than a cache read."})
        self.spec_warnings = self.check_specs()

    def check_specs(self) -> list[str]:
        """Refuse specs that can never work (e.g. a replay file that does not exist);
        return warnings for what the environment can still fix (a missing API key)."""
        from agents.providers.errors import InvalidModelSpec
        from agents.providers.factory import check_model_spec

        warnings: list[str] = []
        for field, specs in (("model", [self.model]), ("fallback_models", self.fallback_models.split(","))):
            for spec in filter(None, (s.strip() for s in specs)):
                try:
                    validate_model_spec(spec)
                except ValidationError:
                    continue  # the field's own validator says so already
                try:
                    warning = check_model_spec(spec, api_key=self.api_key or None, base_url=self.base_url or None,
                                               replay_dir=settings.REPLAYS_DIR)
                except InvalidModelSpec as exc:
                    raise ValidationError({field: str(exc)}) from None
                if warning:
                    warnings.append(warning)
        return warnings

    def price_for(self, spec: str) -> ModelPrice:
        """The price of a call answered by ``spec``: this profile's own prices for its
        model, the table's for any other (a fallback)."""
        price = price_for(spec)
        if spec != self.model:
            return price
        return price.with_overrides(input=self.price_input, cached_input=self.price_cached_input,
                                    cache_write=self.price_cache_write, output=self.price_output)
