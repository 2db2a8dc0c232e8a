"""Writes to rooms. Each service checks permissions itself, persists, and broadcasts
after commit, so views, consumers and admin actions stay thin."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from agents.models import AgentProfile
from rooms import events, signals
from rooms.checks import (
    RESERVED_SLUGS,
    check_can_assign_agents,
    check_can_configure,
    check_can_manage_members,
    check_can_post,
    check_check_command,
    check_client_key,
    check_is_staff,
    check_message_text,
    check_room_name,
)
from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership, Message, Room, RoomAgent, RoomUpstream
from rooms.own_key import check_may_assign
from rooms.repository.prepare import (
    NewRepository,
    RepositorySource,
    UpstreamRepository,
    prepare_repository,
)
from rooms.selectors import membership_of, room_agent_for

SLUG_MAX_LENGTH = 60  # leaves room for a "-<n>" suffix within the 80-character column


# --- rooms -----------------------------------------------------------------------------


def room_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    source: RepositorySource | None = None,
    check_command: str = "",
) -> Room:
    """Create a room, its owner's membership and its repository, all or nothing.

    git runs first, with no transaction open: a clone may take minutes, and on SQLite
    an open write transaction would make every other writer of the hub wait for it.
    The finished repository waits in a hidden folder; the transaction creates the rows
    and, last, renames the folder into place. Any failure (git, the rows, the rename,
    the commit) removes the folder wherever it is. ``durable`` makes "the block
    exited" mean "committed", so that promise holds: this cannot run inside a
    caller's transaction.
    """
    name = check_room_name(name)
    check_command = check_check_command(check_command)
    prepared = prepare_repository(source or NewRepository(), parent=settings.REPOS_DIR)
    try:
        with transaction.atomic(durable=True):
            slug = _free_slug(name)
            target = settings.REPOS_DIR / slug
            room = Room.objects.create(
                name=name, slug=slug, owner=owner, repo_path=str(target),
                default_branch=prepared.default_branch, check_command=check_command,
            )
            Membership.objects.create(room=room, user=owner, role=Membership.Role.OWNER)
            if isinstance(source, UpstreamRepository):
                RoomUpstream.objects.create(room=room, url=source.upstream.url, branch=source.upstream.branch,
                                            token=source.upstream.token, after_work=source.after_work,
                                            forge=source.forge, api_url=source.api_url,
                                            deploy_key=source.upstream.deploy_key,
                                            known_hosts=source.upstream.known_hosts)
            _post_system(room=room, actor=owner, text=f"{owner.get_username()} created the room.")
            prepared.install(target)
    except IntegrityError as exc:
        # Only a concurrent create of the same slug gets here (the slug was free a moment ago).
        prepared.discard()
        raise RoomError("Another room with this name was created just now; try again.", code="exists") from exc
    except BaseException:
        prepared.discard()
        raise
    return room


def _free_slug(name: str) -> str:
    base = slugify(name)[:SLUG_MAX_LENGTH].strip("-") or "room"
    candidate, n = base, 1
    while (
        candidate in RESERVED_SLUGS
        or Room.objects.filter(slug=candidate).exists()
        or (settings.REPOS_DIR / candidate).exists()
    ):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


@transaction.atomic
def room_settings_update(*, room: Room, actor: AbstractBaseUser, check_command: str,
                         allow_network: bool | None = None) -> Room:
    """The room's check command and network access (None: left as it is), set by an owner;
    the room hears of each change."""
    check_can_configure(_membership_of(room, actor))
    check_command = check_check_command(check_command)
    locked = Room.objects.select_for_update().get(pk=room.pk)
    allow_network = locked.allow_network if allow_network is None else bool(allow_network)
    changes = []
    if locked.check_command != check_command:
        changes.append(f"set the check command to `{check_command}`" if check_command
                       else "removed the check command")
    if locked.allow_network != allow_network:
        changes.append("allowed commands network access" if allow_network else "turned commands' network access off")
    if changes:
        locked.check_command, locked.allow_network = check_command, allow_network
        locked.save(update_fields=["check_command", "allow_network"])
        _post_system(room=locked, actor=actor, text=f"{actor.get_username()} {' and '.join(changes)}.")
    room.check_command, room.allow_network = locked.check_command, locked.allow_network
    return locked


# --- membership -------------------------------------------------------------------------


@transaction.atomic
def membership_add(
    *, room: Room, actor: AbstractBaseUser, username: str, role: str = Membership.Role.MEMBER
) -> Membership:
    check_can_manage_members(_membership_of(room, actor))
    if role not in Membership.Role.values:
        raise RoomError(f"Unknown role {role!r}.", code="invalid")
    user = get_user_model().objects.filter(username=(username or "").strip()).first()
    if user is None:
        raise RoomError(f"There is no user named {username!r}.", code="unknown_user")
    if Membership.objects.filter(room=room, user=user).exists():
        raise RoomError(f"{user.get_username()} is already in this room.", code="exists")
    membership = Membership.objects.create(room=room, user=user, role=role)
    _post_system(
        room=room, actor=actor,
        text=f"{actor.get_username()} added {user.get_username()} as {role}.",
    )
    return membership


@transaction.atomic
def membership_remove(*, room: Room, actor: AbstractBaseUser, user_id: int, as_staff: bool = False) -> None:
    """``as_staff``: ``actor`` removes the person from the admin, without being an owner
    of the room; the removal is the same (their open sockets close after commit)."""
    if as_staff:
        check_is_staff(actor)
    else:
        check_can_manage_members(_membership_of(room, actor))
    if user_id == room.owner_id:
        raise RoomPermissionError("The room's owner cannot be removed.")
    membership = Membership.objects.select_related("user").filter(room=room, user_id=user_id).first()
    if membership is None:
        raise RoomError("That person is not in this room.", code="not_found")
    membership.delete()
    _post_system(
        room=room, actor=actor,
        text=f"{actor.get_username()} removed {membership.user.get_username()}.",
    )
    # Open websockets of the removed person stop receiving the room and its sessions.
    events.broadcast_on_commit(room.pk, {"type": events.MEMBER_REMOVED, "user_id": user_id})
    signals.member_removed.send(sender=Room, room_id=room.pk, user_id=user_id)


# --- messages ---------------------------------------------------------------------------


@transaction.atomic
def message_post(
    *,
    room: Room,
    author: AbstractBaseUser | None,
    kind: str,
    text: str,
    agent: AgentProfile | None = None,
    replaces: tuple[int, ...] = (),
    client_key: str = "",
    bind: Callable[[Message], object] | None = None,
) -> Message:
    """Persist a message with the room's next seq; broadcast it after commit.

    People's messages (chat, steer) are checked: the author must be a member who may
    post, a steer must name an agent assigned to the room. System and agent messages
    come from the hub itself. ``client_key`` (a person's frame id) makes a post
    idempotent: the same author and key in a room return the message stored first.
    ``agent``: the agent that speaks (kind agent) or is steered (kind steer). ``bind``
    records what an app above keeps with the message (sessions: the session it belongs
    to) before anyone hears of it: the apps above hear through ``signals.message_posted``,
    in this transaction, and the page after commit.
    """
    if kind not in Message.Kind.values:
        raise RoomError(f"Unknown message kind {kind!r}.", code="invalid")
    if kind in (Message.Kind.CHAT, Message.Kind.STEER):
        if author is None:
            raise RoomPermissionError("A person's message needs an author.")
        check_can_post(_membership_of(room, author))
        text = check_message_text(text)
    if kind == Message.Kind.STEER:
        if agent is None or room_agent_for(room, agent.pk) is None:
            raise RoomError("Steer an agent that is assigned to this room.", code="unknown_agent")
    elif kind == Message.Kind.AGENT and agent is None:
        raise RoomError("An agent message needs its agent.", code="invalid")
    if not text:
        raise RoomError("The message is empty.", code="empty")
    if client_key:
        client_key = check_client_key(client_key)
        # The room row lock serialises posts of the room, so two copies of one frame
        # racing each other find the first one here.
        Room.objects.select_for_update().filter(pk=room.pk).first()
        if (earlier := Message.objects.filter(room=room, author=author, client_key=client_key).first()) is not None:
            return earlier

    seq = _next_seq(room)
    message = Message.objects.create(
        room=room, seq=seq, kind=kind, author=author, agent=agent, text=text,
        replaces=list(replaces),
        client_key=client_key,
    )
    if bind is not None:
        bind(message)
    events.broadcast_on_commit(
        room.pk, {"type": events.MESSAGE_POSTED, "seq": seq, "frame": events.message_frame(message)}
    )
    signals.message_posted.send(sender=Message, message=message)
    return message


@transaction.atomic
def message_mark_delivered(*, message: Message) -> bool:
    """Record that a steer reached its session at a step boundary; broadcast the change.

    Compare-and-swap: only the first delivery counts, so a redelivered Celery task
    or a resumed session cannot deliver the same steer twice. Returns whether this
    call was the one that delivered it.
    """
    if message.kind != Message.Kind.STEER:
        raise RoomError("Only steers are delivered to sessions.", code="invalid")
    now = timezone.now()
    updated = Message.objects.filter(pk=message.pk, delivered_at__isnull=True).update(delivered_at=now)
    if updated != 1:
        return False  # delivered before, by this or another worker
    message.delivered_at = now  # the caller's copy stays truthful
    fresh = Message.objects.select_related("author", "agent").get(pk=message.pk)
    events.broadcast_on_commit(
        message.room_id,
        {"type": events.MESSAGE_UPDATED, "frame": events.message_frame(fresh, frame_type="message.updated")},
    )
    return True


PUSH_REFS_NAMED = 10  # a push of more refs names this many, then how many more


def repository_pushed(*, room: Room, actor: AbstractBaseUser,
                      moved: list[tuple[str, str | None, str | None]]) -> Message:
    """Tell the room what a person's push moved: each ``(ref, before, after)``, None where
    the ref was not there. Running sessions take main's new commits at their next
    bring-in, as they take a merge's."""
    parts = []
    for ref, before, after in moved[:PUSH_REFS_NAMED]:
        name = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else \
            "tag " + ref.removeprefix("refs/tags/")
        if after is None:
            parts.append(f"deleted {name}")
        elif before is None:
            parts.append(f"{name} (new, {after[:7]})")
        else:
            parts.append(f"{name} {before[:7]}..{after[:7]}")
    if len(moved) > PUSH_REFS_NAMED:
        parts.append(f"and {len(moved) - PUSH_REFS_NAMED} more")
    return _post_system(room=room, actor=actor, text=f"{actor.get_username()} pushed " + ", ".join(parts) + ".")


def upstream_said(*, room: Room, text: str) -> Message:
    """The room hears what its upstream came to (a fetch, a push, a proposal)."""
    return _post_system(room=room, actor=None, text=text)


def _next_seq(room: Room) -> int:
    """Allocate the room's next message seq.

    The UPDATE takes the room row's write lock until the transaction ends, so seqs are
    handed out in commit order and a rolled-back post gives its number back: per room,
    committed seqs are dense (1, 2, 3, ...). Consumers rely on that to fill gaps.
    """
    Room.objects.filter(pk=room.pk).update(last_message_seq=F("last_message_seq") + 1)
    room.last_message_seq = Room.objects.values_list("last_message_seq", flat=True).get(pk=room.pk)
    return room.last_message_seq


def _post_system(*, room: Room, actor: AbstractBaseUser | None, text: str) -> Message:
    return message_post(room=room, author=actor, kind=Message.Kind.SYSTEM, text=text)


def _membership_of(room: Room, user: AbstractBaseUser) -> Membership:
    """The user's current membership, read fresh (a role may have changed since page load)."""
    membership = membership_of(room, user)
    if membership is None:
        raise RoomPermissionError("You are not a member of this room.")
    return membership


# --- a room's agents ----------------------------------------------------------------------


@transaction.atomic
def agent_assign(*, room: Room, actor: AbstractBaseUser, agent: AgentProfile) -> RoomAgent:
    check_can_assign_agents(membership_of(room, actor))
    check_may_assign(agent, actor)
    if RoomAgent.objects.filter(room=room, agent=agent).exists():
        raise RoomError(f"{agent.name} is already assigned to this room.", code="exists")
    room_agent = RoomAgent.objects.create(room=room, agent=agent, added_by=actor)
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM, text=f"{actor.get_username()} assigned {agent.name}.")
    return room_agent


@transaction.atomic
def agent_unassign(*, room: Room, actor: AbstractBaseUser, agent_id: int) -> None:
    check_can_assign_agents(membership_of(room, actor))
    room_agent = RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()
    if room_agent is None:
        raise RoomError("That agent is not assigned to this room.", code="unknown_agent")
    room_agent.delete()
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} unassigned {room_agent.agent.name}.")


def agent_changed_tell_rooms(*, agent: AgentProfile, actor: AbstractBaseUser | None,
                             changes: tuple[str, ...]) -> None:
    """A profile is anyone's to use but only its creator's to change: every room using it
    hears of a change that reaches its next sessions, in the room itself, at once.
    ``actor`` None: the hub changed it (its creator's account was deleted)."""
    who = actor.get_username() if actor is not None else "The hub (its creator's account was deleted)"
    text = (f"{who} changed {agent.name} ({', '.join(changes)}); sessions started from now "
            "on use the change; a room's owner can unassign it from the room.")
    for room in Room.objects.filter(room_agents__agent=agent).order_by("pk"):
        message_post(room=room, author=None, kind=Message.Kind.SYSTEM, text=text)
