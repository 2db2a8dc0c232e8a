from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import AgentProfile
from rooms.repository.ssh import fingerprints, public_half


class Room(models.Model):
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=80, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_rooms")
    # Absolute path of the hub-owned repository (under settings.REPOS_DIR).
    repo_path = models.CharField(max_length=500)
    default_branch = models.CharField(max_length=100, default="main")
    check_command = models.CharField(
        max_length=500, blank=True, help_text="Run when an agent says it is done, e.g. `pytest -q`."
    )
    # Commands of this room (agents' and the check) may reach the network; off by default.
    allow_network = models.BooleanField(default=False)
    # Last sequence number handed to a Message of this room (allocated under row lock).
    last_message_seq = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"
        VIEWER = "viewer"

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.room} ({self.role})"

    @property
    def can_post(self) -> bool:
        return self.role in (self.Role.OWNER, self.Role.MEMBER)

    @property
    def can_manage_members(self) -> bool:
        return self.role == self.Role.OWNER


class Message(models.Model):
    class Kind(models.TextChoices):
        CHAT = "chat"  # person -> room
        STEER = "steer"  # person -> one assigned agent
        SYSTEM = "system"
        AGENT = "agent"  # agent -> room

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The steered agent (kind=steer) or the speaking agent (kind=agent). Which session a
    # message belongs to is sessions' to know (sessions.models.SessionMessage).
    agent = models.ForeignKey(AgentProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    # When a steer reached a running session at a step boundary.
    delivered_at = models.DateTimeField(null=True, blank=True)
    # A steer that replaces earlier decisions of the session (their numbers, D<n>).
    replaces = models.JSONField(default=list, blank=True)
    # The id a person's browser gave the frame: a frame sent again after a reconnect
    # (the first copy may or may not have arrived) is stored once.
    client_key = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["room", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["room", "seq"], name="one_seq_per_room"),
            models.UniqueConstraint(fields=["room", "author", "client_key"], condition=~models.Q(client_key=""),
                                    name="one_message_per_client_key"),
        ]

    def __str__(self) -> str:
        return f"{self.room}#{self.seq} {self.kind}"


class RoomAgent(models.Model):
    """An agent assigned to a room."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="room_agents")
    agent = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="room_agents")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The room's reviewer: finished work passes its review before it merges
    # (sessions/runtime/reviews.py). At most one per room; none means review is off.
    reviewer = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agents_roomagent"  # the table it had in agents
        constraints = [
            models.UniqueConstraint(fields=["room", "agent"], name="agent_once_per_room"),
            models.UniqueConstraint(fields=["room"], condition=models.Q(reviewer=True), name="one_reviewer_per_room"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} in {self.room}"


class RoomUpstream(models.Model):
    """Where a room's code lives outside the hub: a repository on a forge, fetched before
    each session starts and given the room's work after it (rooms/repository/upstream.py,
    rooms/upstream_link.py). The token and the deploy key's private half are the hub's
    alone: no page shows them, no agent or sandbox sees them, no message carries them."""

    class AfterWork(models.TextChoices):
        PUSH_MAIN = "push_main", "Merge into main and push main to the upstream"
        PUSH_BRANCH = "push_branch", "Merge into main and push each session's branch to the upstream"
        PROPOSE = "propose", "Propose, don't merge: push the session's branch and open a pull request"

    class ForgeKind(models.TextChoices):
        NONE = "", "None"
        GITHUB = "github", "GitHub"
        GITLAB = "gitlab", "GitLab"

    room = models.OneToOneField(Room, on_delete=models.CASCADE, related_name="upstream")
    url = models.CharField(max_length=500)
    branch = models.CharField(max_length=100, default="main")
    token = models.CharField(max_length=300, blank=True)
    after_work = models.CharField(max_length=20, choices=AfterWork.choices, default=AfterWork.PUSH_MAIN)
    forge = models.CharField(max_length=10, choices=ForgeKind.choices, blank=True)
    api_url = models.CharField(max_length=300, blank=True)  # an enterprise forge's API; empty: the forge's own
    last_said = models.CharField(max_length=500, blank=True)  # what the last fetch or push came to
    last_at = models.DateTimeField(null=True, blank=True)
    deploy_key = models.TextField(blank=True)  # SSH: the room's private key, the hub's alone
    known_hosts = models.TextField(blank=True)  # SSH: the host's keys as scanned when the room was linked

    def __str__(self) -> str:
        return f"{self.room} ← {self.url} ({self.branch})"

    @property
    def public_key(self) -> str:
        """The deploy key's public half, for the forge (empty for an HTTPS link)."""
        return public_half(self.deploy_key, f"atrium-room-{self.room.slug}") if self.deploy_key else ""

    @property
    def host_key_fingerprints(self) -> list[str]:
        return fingerprints(self.known_hosts)
