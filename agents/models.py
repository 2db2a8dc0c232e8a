from __future__ import annotations

from django.conf import settings
from django.db import models


class EvictionPolicy(models.TextChoices):
    ON_DEMAND = "on_demand", "on demand (default)"
    EAGER = "eager", "eager (comparison only)"
    NONE = "none", "none (never evict)"


class AgentProfile(models.Model):
    name = models.CharField(max_length=80, unique=True)
    role_prompt = models.TextField(blank=True)
    # `openai:<model>`, `anthropic:<model>` or `replay:<file>`.
    model = models.CharField(max_length=200)
    context_window = models.PositiveIntegerField(default=128_000)
    output_budget = models.PositiveIntegerField(default=8_000)
    eviction_policy = models.CharField(
        max_length=20, choices=EvictionPolicy.choices, default=EvictionPolicy.ON_DEMAND
    )
    # Tool names this agent may call; empty means every tool.
    allowed_tools = models.JSONField(default=list, blank=True)
    # Optional per-agent provider settings; keys fall back to the environment.
    base_url = models.CharField(max_length=300, blank=True)
    api_key = models.CharField(max_length=300, blank=True)
    fallback_models = models.CharField(max_length=500, blank=True, help_text="Comma-separated model specs.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RoomAgent(models.Model):
    """An agent assigned to a room."""

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="room_agents")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="room_agents")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "agent"], name="agent_once_per_room")]

    def __str__(self) -> str:
        return f"{self.agent} in {self.room}"
