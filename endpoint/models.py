"""Gateway keys (stored hashed) and the conversations of clients that use them: each
conversation is a session; each answer's digest finds it again in a later history."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import AgentProfile
from sessions.models import Session

# The eval ledger (evals/); imported here so the app registers them.


class GatewayKey(models.Model):
    """A key that lets an agent running elsewhere call the gateway endpoint
    (endpoint/) as one of the room's agents.

    Only the SHA-256 of the token is stored: the token is shown once, when it is made.
    The agent profile decides the upstream model and its key; the room bounds what the
    key reaches. A revoked key stays, so the room can see who made and revoked it.
    """

    room = models.ForeignKey("rooms.Room", on_delete=models.CASCADE, related_name="gateway_keys")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="gateway_keys")
    name = models.CharField(max_length=80)
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the token
    prefix = models.CharField(max_length=16)  # the token's start, to tell keys apart
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "agents_gatewaykey"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) in {self.room}"


class GatewayConversation(models.Model):
    """A stateless client's conversation through the gateway endpoint, and the session it
    drives (endpoint/conversation.py names it). ``digests`` are the client's
    messages as its last answered request held them: what the next request is compared
    with. Its row lock serialises two requests of one conversation."""

    key = models.ForeignKey(GatewayKey, on_delete=models.CASCADE, related_name="conversations")
    conversation = models.CharField(max_length=200)
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="gateway_conversation")
    digests = models.JSONField(default=list, blank=True)
    # The digest of the last answer given: a diverged history that holds it is this
    # conversation changed by its client; one that does not is another run (a fork).
    last_answer = models.CharField(max_length=64, blank=True)
    requests = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agents_gatewayconversation"
        constraints = [models.UniqueConstraint(fields=["key", "conversation"], name="one_gateway_conversation")]

    def __str__(self) -> str:
        return f"{self.conversation[:24]} → session {self.session_id}"


class GatewayAnswer(models.Model):
    """An answer the gateway gave in a conversation, by the digest of the assistant
    message a client sends back with its history: the next request that holds it
    continues that conversation (endpoint/conversation.py ``route``)."""

    key = models.ForeignKey(GatewayKey, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(GatewayConversation, on_delete=models.CASCADE, related_name="answers")
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_gatewayanswer"
        indexes = [models.Index(fields=["key", "digest"], name="gateway_answer_digest")]

    def __str__(self) -> str:
        return f"{self.digest[:12]} → {self.conversation_id}"
