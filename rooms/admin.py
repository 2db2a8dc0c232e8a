from __future__ import annotations

from django.contrib import admin
from django.utils.text import Truncator

from rooms.models import Membership, Message, Room


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


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


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["room", "user", "role", "created_at"]
    list_filter = ["role", "room"]
    search_fields = ["room__name", "room__slug", "user__username"]
    autocomplete_fields = ["room", "user"]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["room", "seq", "kind", "author", "agent", "short_text", "created_at", "delivered_at"]
    list_filter = ["kind", "room", ("delivered_at", admin.EmptyFieldListFilter)]
    search_fields = ["text", "room__name", "author__username", "agent__name"]
    list_select_related = ["room", "author", "agent"]
    readonly_fields = ["room", "seq", "kind", "author", "agent", "session", "created_at", "delivered_at"]

    def has_add_permission(self, request) -> bool:
        # Messages get their seq from message_post; a hand-made one would break the sequence.
        return False

    @admin.display(description="text")
    def short_text(self, message: Message) -> str:
        return Truncator(message.text).chars(80)
