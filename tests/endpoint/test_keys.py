"""Gateway keys on the room page: made by people who may act in the room, for the
room's agents only, shown once, stored hashed, revoked by their maker or an owner."""

from __future__ import annotations

import hashlib
import re

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from endpoint.keys import (
    CONVERSATIONS_SHOWN,
    TOKEN_PREFIX,
    gateway_key_create,
    gateway_key_lookup,
    gateway_key_revoke,
)
from endpoint.models import GatewayConversation, GatewayKey
from rooms.errors import RoomError, RoomPermissionError
from rooms.services import agent_assign
from sessions.models import Session, Task
from tests.rooms.factories import make_agent, make_room, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
lookup = async_to_sync(gateway_key_lookup)


@pytest.fixture
def people(transactional_db):
    return {name: make_user(name) for name in ("olga", "mo", "vi", "stranger")}


@pytest.fixture
def room(people):
    return make_room(people["olga"], "Keys room", members=[people["mo"]], viewers=[people["vi"]],
                     agents=[make_agent("gpt", "openai:gpt-4.1")])


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_key_is_stored_hashed_and_found_by_its_token_only(room, people):
    agent = room.room_agents.get().agent
    made = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="  laptop aider ")
    assert made.token.startswith(TOKEN_PREFIX) and len(made.token) >= len(TOKEN_PREFIX) + 43
    key = GatewayKey.objects.get()
    assert (key.name, key.agent, key.room, key.created_by) == ("laptop aider", agent, room, people["mo"])
    assert key.digest == hashlib.sha256(made.token.encode()).hexdigest()
    assert made.token not in str(GatewayKey.objects.values().get())  # only the digest and a short prefix
    assert made.token.startswith(key.prefix) and len(key.prefix) < 16
    assert lookup(made.token) == key and lookup(made.token, room_slug=room.slug) == key
    assert lookup(made.token, room_slug="another-room") is None
    assert lookup(made.token[:-1]) is None and lookup(None) is None and lookup("é" + made.token) is None
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_who_may_make_and_revoke_keys(room, people):
    agent = room.room_agents.get().agent
    for who in ("vi", "stranger"):
        with pytest.raises(RoomPermissionError):
            gateway_key_create(room=room, actor=people[who], agent_id=agent.pk, name="k")
    with pytest.raises(RoomError, match="not assigned"):
        gateway_key_create(room=room, actor=people["olga"], agent_id=make_agent("elsewhere", "openai:x").pk, name="k")
    for name in ("", "   ", "x" * 81, "nul\x00"):
        with pytest.raises(RoomError):
            gateway_key_create(room=room, actor=people["olga"], agent_id=agent.pk, name=name)
    olgas = gateway_key_create(room=room, actor=people["olga"], agent_id=agent.pk, name="olga's")
    mos = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="mo's")
    with pytest.raises(RoomPermissionError):
        gateway_key_revoke(room=room, actor=people["mo"], key_id=olgas.key.pk)
    with pytest.raises(RoomError, match="No such key"):
        gateway_key_revoke(room=make_room(people["mo"]), actor=people["mo"], key_id=mos.key.pk)
    gateway_key_revoke(room=room, actor=people["olga"], key_id=mos.key.pk)  # an owner may
    gateway_key_revoke(room=room, actor=people["olga"], key_id=olgas.key.pk)
    assert lookup(mos.token) is None and lookup(olgas.token) is None
    assert GatewayKey.objects.get(pk=mos.key.pk).revoked_by == people["olga"]


def test_the_panel_shows_a_new_token_once_and_revokes(room, people):
    agent = room.room_agents.get().agent
    url = reverse("endpoint:gateway_keys", args=[room.slug])
    mo = login(people["mo"])
    assert 'id="gateway-key-create"' in mo.get(url, **HTMX).content.decode()
    html = mo.post(reverse("endpoint:gateway_key_new", args=[room.slug]), {"name": "aider", "agent": agent.pk},
                   **HTMX).content.decode()
    token = re.search(r"<code>(atr-gw-[^<]+)</code>", html).group(1)
    assert lookup(token).name == "aider"
    assert "/v1</code>" in html
    again = mo.get(url, **HTMX).content.decode()
    assert token not in again and GatewayKey.objects.get().prefix in again
    # Viewers read the list; they make and revoke nothing; strangers see no room.
    vi = login(people["vi"])
    vi_html = vi.get(url, **HTMX).content.decode()
    assert "aider" in vi_html and 'id="gateway-key-create"' not in vi_html and "revoke" not in vi_html
    key = GatewayKey.objects.get()
    assert vi.post(reverse("endpoint:gateway_key_revoke", args=[room.slug, key.pk]), **HTMX).status_code == 403
    assert vi.post(reverse("endpoint:gateway_key_new", args=[room.slug]), {"name": "x", "agent": agent.pk},
                   **HTMX).status_code == 403
    assert login(people["stranger"]).get(url, **HTMX).status_code == 404
    bad = mo.post(reverse("endpoint:gateway_key_new", args=[room.slug]), {"name": "x", "agent": 999999}, **HTMX)
    assert bad.status_code == 200 and GatewayKey.objects.count() == 1
    html = mo.post(reverse("endpoint:gateway_key_revoke", args=[room.slug, key.pk]), **HTMX).content.decode()
    assert "Key revoked." in html and "revoked</span>" in html
    assert lookup(token) is None
    # The room page loads the panel.
    page = mo.get(reverse("room", args=[room.slug])).content.decode()
    assert f'hx-get="{url}"' in page


def test_staff_revoke_keys_from_the_admin_and_make_none_there(room, people):
    agent = room.room_agents.get().agent
    made = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="aider")
    staff = make_user("root")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    admin = login(staff)
    assert admin.get("/admin/endpoint/gatewaykey/add/").status_code == 403
    page = admin.get("/admin/endpoint/gatewaykey/").content.decode()
    assert made.key.prefix in page and made.token not in page
    admin.post("/admin/endpoint/gatewaykey/", {"action": "revoke", "_selected_action": [made.key.pk]})
    assert lookup(made.token) is None
    assert GatewayKey.objects.get().revoked_by == staff
    with pytest.raises(RoomPermissionError):  # as_staff is for staff only
        gateway_key_revoke(room=room, actor=people["mo"], key_id=made.key.pk, as_staff=True)


def test_a_profile_on_its_creators_own_provider_key_is_keyed_by_its_creator_or_staff_only(people):
    """In a room the attacker owns, where the victim assigned their profile themselves, the
    attacker cannot make a key that spends the victim's provider account from anywhere."""
    victim, attacker = people["mo"], people["olga"]
    own = make_agent("mos-gpt", "openai:gpt-4.1", owner=victim, api_key="sk-mo-own-account-0001")
    shared = make_agent("hub-gpt", "openai:gpt-4.1", owner=victim)  # on the hub's keys
    room = make_room(attacker, "Attacker's room", members=[victim], agents=[shared])
    agent_assign(room=room, actor=victim, agent=own)
    with pytest.raises(RoomPermissionError, match="its creator's own account"):
        gateway_key_create(room=room, actor=attacker, agent_id=own.pk, name="spend it")
    assert gateway_key_create(room=room, actor=attacker, agent_id=shared.pk, name="hub's").key.agent == shared
    assert gateway_key_create(room=room, actor=victim, agent_id=own.pk, name="mine").key.agent == own
    staff = make_user("root-ops")
    staff.is_staff = True
    staff.save()
    room.memberships.create(user=staff, role="member")
    assert gateway_key_create(room=room, actor=staff, agent_id=own.pk, name="ops").key.agent == own
    # On the page: the attacker is not offered it, and a forged post is refused.
    client = login(attacker)
    url = reverse("endpoint:gateway_keys", args=[room.slug])
    html = client.get(url, **HTMX).content.decode()
    assert f'value="{shared.pk}"' in html and f'value="{own.pk}"' not in html
    forged = client.post(reverse("endpoint:gateway_key_new", args=[room.slug]), {"name": "x", "agent": own.pk}, **HTMX)
    assert forged.status_code == 200 and "shown this once" not in forged.content.decode()
    assert f'value="{own.pk}"' in login(victim).get(url, **HTMX).content.decode()
    assert GatewayKey.objects.filter(agent=own).count() == 2
    # A key made while the profile ran on the hub's keys stops when its creator gives it their own.
    before = gateway_key_create(room=room, actor=attacker, agent_id=shared.pk, name="made before").token
    assert lookup(before) is not None
    shared.api_key = "sk-mo-own-account-0002"
    shared.save()
    assert lookup(before) is None


def test_each_key_shows_what_its_conversations_used(room, people):
    agent = room.room_agents.get().agent
    made = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="aider")
    idle = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="unused")
    task = Task.objects.create(room=room, title="t", objective="o")
    for n, (requests, tokens_in, tokens_out) in enumerate([(3, 1200, 80), (2, 300, 20)]):
        session = Session.objects.create(task=task, agent=agent, attempt=n + 1, origin=Session.Origin.ENDPOINT,
                                         tokens_input=tokens_in, tokens_output=tokens_out)
        GatewayConversation.objects.create(key=made.key, conversation=f"c{n}", session=session, requests=requests)
    html = login(people["vi"]).get(reverse("endpoint:gateway_keys", args=[room.slug]), **HTMX).content.decode()
    assert 'data-usage="2 5 1500 100"' in html and "2 conversations, 5 requests, 1500 tokens in, 100 out" in html
    assert 'data-usage="0 0 0 0"' in html and "no conversations yet" in html  # the unused key
    assert idle.key.name in html
    # Issue 30: the counts linked nowhere; each conversation now links to its session and ledger.
    for session in Session.objects.filter(gateway_conversation__key=made.key):
        assert reverse("sessions:session", args=[session.pk]) in html
        assert reverse("sessions:ledger", args=[session.pk]) in html
    assert "The newest" not in html


def test_a_key_links_its_newest_conversations_only(room, people):
    agent = room.room_agents.get().agent
    made = gateway_key_create(room=room, actor=people["mo"], agent_id=agent.pk, name="busy")
    task = Task.objects.create(room=room, title="t", objective="o")
    sessions = [Session.objects.create(task=task, agent=agent, attempt=n + 1, origin=Session.Origin.ENDPOINT)
                for n in range(CONVERSATIONS_SHOWN + 2)]
    for n, session in enumerate(sessions):
        GatewayConversation.objects.create(key=made.key, conversation=f"c{n}", session=session, requests=1)
    html = login(people["vi"]).get(reverse("endpoint:gateway_keys", args=[room.slug]), **HTMX).content.decode()
    shown = [s for s in sessions if f'href="{reverse("sessions:session", args=[s.pk])}"' in html]
    assert shown == sessions[2:]  # the newest ones
    assert f"The newest {CONVERSATIONS_SHOWN} shown." in html


def test_a_staff_key_for_a_profile_on_its_creators_account_works_while_its_creator_acts_in_the_room(people):
    """The key's maker is not the profile's creator: the creator's leaving, being made a
    viewer or deactivated stops the key, in the one query of its lookup."""
    creator, owner = people["mo"], people["olga"]
    own = make_agent("mos-gpt", "openai:gpt-4.1", owner=creator, api_key="sk-mo-own-account-0001")
    room = make_room(owner, "Shared room", members=[creator])
    agent_assign(room=room, actor=creator, agent=own)
    staff = make_user("root-ops")
    staff.is_staff = True
    staff.save()
    room.memberships.create(user=staff, role="member")
    token = gateway_key_create(room=room, actor=staff, agent_id=own.pk, name="ops").token
    assert lookup(token).agent == own
    membership = room.memberships.get(user=creator)
    membership.role = "viewer"
    membership.save()
    assert lookup(token) is None
    membership.role = "member"
    membership.save()
    assert lookup(token) is not None
    creator.is_active = False
    creator.save()
    assert lookup(token) is None
    creator.is_active = True
    creator.save()
    membership.delete()
    assert lookup(token) is None
