from __future__ import annotations

from django.contrib import admin

from remote.models import AccessToken


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    """People's access tokens, read here (their digests only; a token is shown once, to
    its person). Staff revoke one by setting its revoked time."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at", "created_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "last_used_at"]
    exclude = ["digest"]

    def has_add_permission(self, request) -> bool:
        return False
