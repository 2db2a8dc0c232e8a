from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from rooms.errors import RoomError
from rooms.models import Membership, Message, Room, RoomAgent, RoomUpstream
from rooms.repository.ssh import scan_host_keys, ssh_address
from rooms.services import membership_remove


class MembershipInline(admin.TabularInline):
    """Who is in the room, read here; people are removed from the memberships list,
    through membership_remove (which also closes their open sockets)."""

    model = Membership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["user", "role", "created_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Room)
class RoomAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "owner", "default_branch", "last_message_seq", "created_at"]
    list_filter = ["created_at"]
    search_fields = ["name", "slug", "owner__username"]
    readonly_fields = ["slug", "repo_path", "default_branch", "last_message_seq", "created_at"]
    inlines = [MembershipInline]

    def has_add_permission(self, request) -> bool:
        # A room row needs its repository; rooms are created on the web (room_create).
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # No service deletes a room yet: a plain delete would leave its repository on
        # disk and its people's pages open (and its memberships go only through
        # membership_remove, so Django would refuse the cascade anyway).
        return False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["room", "user", "role", "created_at"]
    list_filter = ["role", "room"]
    search_fields = ["room__name", "room__slug", "user__username"]
    autocomplete_fields = ["room", "user"]
    actions = ["remove_from_room"]

    # Moving a membership to another person or room would be a removal that skips
    # membership_remove (their sockets would stay open); a role changes nowhere else.
    readonly_fields = ["room", "user", "role", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # people are added on the room page (membership_add: its checks, its room post)

    def has_delete_permission(self, request: HttpRequest, obj: Membership | None = None) -> bool:
        return False  # a plain delete skips closing the person's sockets: see remove_from_room

    @admin.action(permissions=["change"], description="Remove the selected people from their rooms (closes their open pages)")
    def remove_from_room(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        removed, refused = [], []
        for membership in queryset.select_related("room", "user").order_by("pk"):
            who = f"{membership.user.get_username()} from {membership.room.name}"
            try:
                membership_remove(room=membership.room, actor=request.user, user_id=membership.user_id,
                                  as_staff=True)
            except RoomError as exc:
                refused.append(f"{who} not removed: {exc.message}")
            else:
                self.log_deletions(request, [membership])
                removed.append(who)
        if removed:
            self.message_user(request, "Removed " + "; ".join(removed) + ".", messages.SUCCESS)
        for refusal in refused:
            self.message_user(request, refusal, messages.WARNING)


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["room", "seq", "kind", "author", "agent", "short_text", "created_at", "delivered_at"]
    list_filter = ["kind", "room", ("delivered_at", admin.EmptyFieldListFilter)]
    search_fields = ["text", "room__name", "author__username", "agent__name"]
    list_select_related = ["room", "author", "agent"]
    readonly_fields = ["room", "seq", "kind", "author", "agent", "created_at", "delivered_at"]

    def has_add_permission(self, request) -> bool:
        # Messages get their seq from message_post; a hand-made one would break the sequence.
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Sockets replay a room's messages by dense seq: a deleted one is a hole every
        # replay and gap fill runs into.
        return False

    @admin.display(description="text")
    def short_text(self, message: Message) -> str:
        return Truncator(message.text).chars(80)


@admin.register(RoomAgent)
class RoomAgentAdmin(admin.ModelAdmin):
    list_display = ["agent", "room", "reviewer", "added_by", "created_at"]
    list_filter = ["agent", "room", "reviewer"]
    search_fields = ["agent__name", "room__name", "room__slug"]
    autocomplete_fields = ["room", "agent"]
    # Assigned and unassigned on the room page (agent_assign / agent_unassign: the
    # owner's check and the room's post); here they are read.
    readonly_fields = ["room", "agent", "added_by", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(RoomUpstream)
class RoomUpstreamAdmin(admin.ModelAdmin):
    """A room's link to its upstream, read here. The token and the deploy key's private
    half are never shown, not even to staff: changing them is making the room again (or
    a shell). A forge that changed its SSH host key is scanned again by an action."""

    list_display = ["room", "url", "branch", "after_work", "forge", "last_at"]
    list_filter = ["after_work", "forge"]
    search_fields = ["room__name", "room__slug", "url"]
    exclude = ["token", "deploy_key", "known_hosts"]
    readonly_fields = ["room", "url", "branch", "after_work", "forge", "api_url", "last_said", "last_at",
                       "public_key", "host_key_fingerprints"]
    actions = ["scan_host_keys_again"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Scan the SSH host's keys again (after the forge changed them)")
    def scan_host_keys_again(self, request: HttpRequest, queryset: QuerySet[RoomUpstream]) -> None:
        for link in queryset:
            if (address := ssh_address(link.url)) is None:
                continue
            try:
                link.known_hosts = scan_host_keys(address)
            except ValueError as exc:
                self.message_user(request, f"{link.room}: {exc}", messages.ERROR)
                continue
            link.save(update_fields=["known_hosts"])
            self.message_user(request, f"{link.room}: {', '.join(link.host_key_fingerprints)}")
