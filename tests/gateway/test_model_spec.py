"""One parser of model specs, and every caller agrees with it."""

from __future__ import annotations

import contextlib

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given
from hypothesis import strategies as st

from agents.models import validate_model_spec
from agents.providers import InvalidModelSpec, parse_spec
from observations.gateway.model_spec import (
    KINDS,
    ModelSpec,
    ModelSpecError,
    model_kind,
    parse_model_spec,
)
from observations.gateway.prices import price_for


def test_a_spec_is_its_kind_and_its_name_which_keeps_its_colons():
    assert parse_model_spec("openai:ollama/qwen2.5-coder:7b") == ModelSpec("openai", "ollama/qwen2.5-coder:7b")
    assert str(parse_model_spec("  anthropic:claude-sonnet-4-5 ")) == "anthropic:claude-sonnet-4-5"


@pytest.mark.parametrize(("spec", "code", "message"), [
    ("gpt-4.1", "unknown_kind", "expected openai:<model>, anthropic:<model> or replay:<file>"),
    ("Openai:gpt-4o", "unknown_kind", "expected openai:<model>"),
    ("", "unknown_kind", "expected openai:<model>"),
    ("anthropic:  ", "no_name", "names no model"),
    ("openai: gpt-4.1", "space", "holds whitespace"),
    ("replay:../../etc/passwd", "path", "names a file in the hub's replay folder, not a path"),
    ("script:/abs", "path", "names a file in the hub's script folder"),
    ("replay:.hidden.json", "path", "not a path"),
])
def test_what_is_not_a_spec_is_refused_saying_why(spec, code, message):
    with pytest.raises(ModelSpecError, match=message) as refused:
        parse_model_spec(spec)
    assert refused.value.code == code
    assert model_kind(spec) is None


names = st.text(st.characters(blacklist_categories=("Zs", "Cc")), min_size=1, max_size=30)


@given(kind=st.sampled_from(KINDS), name=names)
def test_the_factory_the_field_validator_and_the_parser_accept_the_same_specs(kind, name):
    spec = f"{kind}:{name}"
    try:
        parsed = parse_model_spec(spec)
    except ModelSpecError:
        with pytest.raises(InvalidModelSpec):
            parse_spec(spec)
        with pytest.raises(ValidationError):
            validate_model_spec(spec)
        return
    assert parse_spec(spec) == parsed
    validate_model_spec(spec)
    assert model_kind(spec) == kind


@given(text=st.text(max_size=40))
def test_parsing_never_fails_other_than_by_refusing(text):
    with contextlib.suppress(ModelSpecError):
        parse_model_spec(text)
    price_for(text)  # prices anything: a bare name is priced by its family


def test_prices_read_the_spec_as_the_parser_does():
    assert price_for("anthropic:claude-sonnet-4-5").provider == "anthropic"
    assert price_for("replay:demo.json").provider == "replay"
    assert price_for("openai:ollama/qwen2.5-coder:7b").provider == "compatible"
    assert price_for("claude-sonnet-4-5").provider == "anthropic"  # bare name: by family
