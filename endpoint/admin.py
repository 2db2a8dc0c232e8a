"""Gateway keys and the conversations they carry, in the admin: revoked through the same
service as the room page; everything else read-only."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from endpoint.keys import gateway_key_revoke
from endpoint.models import GatewayAnswer, GatewayConversation, GatewayKey
from rooms.errors import RoomError


@admin.register(GatewayKey)
class GatewayKeyAdmin(admin.ModelAdmin):
    """Keys are made on the room page (their token is shown there once); here they are
    read and revoked, through the room page's service."""

    list_display = ["name", "prefix", "room", "agent", "created_by", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["agent", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "room__name", "room__slug", "agent__name"]
    readonly_fields = [field.name for field in GatewayKey._meta.concrete_fields]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(permissions=["change"], description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[GatewayKey]) -> None:
        revoked = []
        for key in queryset.select_related("room").filter(revoked_at__isnull=True).order_by("pk"):
            try:
                gateway_key_revoke(room=key.room, actor=request.user, key_id=key.pk, as_staff=True)
            except RoomError as exc:
                self.message_user(request, f"Key {key.prefix}… not revoked: {exc.message}", messages.WARNING)
            else:
                self.log_change(request, key, "revoked in the admin")
                revoked.append(f"{key.name} ({key.prefix}…)")
        if revoked:
            self.message_user(request, "Revoked " + ", ".join(revoked) + ".", messages.SUCCESS)


@admin.register(GatewayConversation)
class GatewayConversationAdmin(admin.ModelAdmin):
    """Which session a gateway client's conversation drives: made and updated by its
    requests only (endpoint/sessions.py), read here."""

    list_display = ["conversation", "key", "session", "requests", "created_at", "updated_at"]
    list_filter = [("key__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["conversation", "key__name", "key__prefix"]
    readonly_fields = [field.name for field in GatewayConversation._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: GatewayConversation | None = None) -> bool:
        return False


@admin.register(GatewayAnswer)
class GatewayAnswerAdmin(admin.ModelAdmin):
    """The gateway's answers by digest, which find a conversation in a client's history:
    made by its requests only, read here."""

    list_display = ["digest", "conversation", "key", "created_at"]
    list_filter = [("key__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["digest", "conversation__conversation"]
    readonly_fields = [field.name for field in GatewayAnswer._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: GatewayAnswer | None = None) -> bool:
        return False
