"""Personal access tokens: how a person's git (or any client) proves who they are to the
room repositories they belong to, over HTTP basic authentication."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AccessToken(models.Model):
    """A person's token for the git remote. Only its SHA-256 is stored: the token is shown
    once, when it is made. What it reaches is what its person may do in each room, read
    fresh on every request (a viewer reads, a member pushes). A revoked token stays listed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=80)
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the token
    prefix = models.CharField(max_length=16)  # the token's start, to tell tokens apart
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"
