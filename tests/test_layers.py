"""The schema follows the floors of the house: a model's foreign keys point at its own
app or one below it, never above (the import contract in pyproject.toml holds the code
to the same order). A key pointing up would make the lower app's tables depend on an
app it may not import."""

from __future__ import annotations

import tomllib
from pathlib import Path

from django.apps import apps

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _floors() -> dict[str, int]:
    """Each app's floor by its label, from the layers contract: 0 is the ground floor."""
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["name"].startswith("Apps import only downwards"))
    floors = {}
    for height, layer in enumerate(reversed(layers)):
        for package in layer.split("|"):
            floors[apps.get_containing_app_config(package.strip()).label] = height
    return floors


def keys_pointing_up(models, floors: dict[str, int]) -> list[str]:
    """``app.Model.field -> app.Target`` for each foreign key of ``models`` that points at
    an app on a higher floor (Django's own and third-party apps have no floor)."""
    found = []
    for model in models:
        source = floors.get(model._meta.app_label)
        for field in model._meta.get_fields():
            if not (field.is_relation and field.concrete and field.related_model is not None):
                continue
            target = floors.get(field.related_model._meta.app_label)
            if source is not None and target is not None and target > source:
                found.append(f"{model._meta.label}.{field.name} -> {field.related_model._meta.label}")
    return found


def test_every_app_of_the_house_is_on_a_floor():
    floors = _floors()
    assert set(floors) == {"hub", "endpoint", "evals", "remote", "agent_sessions", "rooms", "agents", "observations"}


def test_no_foreign_key_points_up():
    assert keys_pointing_up(apps.get_models(), _floors()) == []


def test_a_key_pointing_up_is_caught():
    """The room's message that named its session, as rooms had it before the key moved
    to sessions (SessionMessage), points from rooms up to sessions."""
    from django.db import models

    class MessageWithItsSession(models.Model):
        session = models.ForeignKey("agent_sessions.Session", on_delete=models.CASCADE)

        class Meta:
            app_label = "rooms"

        def __str__(self) -> str:
            return str(self.pk)

    try:
        assert keys_pointing_up([MessageWithItsSession], _floors()) == [
            "rooms.MessageWithItsSession.session -> agent_sessions.Session"]
    finally:
        del apps.all_models["rooms"]["messagewithitssession"]
        apps.clear_cache()
