"""Tasks, sessions and their records in the admin: actions call the same services as the
pages (retry, cancel, decide), and fields the state machine owns are read-only."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from rooms.errors import RoomError
from sessions.approval_rules import rule_checked
from sessions.models import (
    AgentMention,
    Approval,
    ApprovalRule,
    ProviderCall,
    Review,
    Session,
    SessionEvent,
    Task,
)
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_cancel, session_retry
from sessions.templatetags.session_work import session_duration

# What the changelist of sessions leaves unread: the runtime's and gateway's JSON state.
_SESSION_BULK = ("gateway_state", "runtime_state", "analysis", "room_status_notes")


def _field_names(model) -> list[str]:
    return [field.name for field in model._meta.concrete_fields]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["title", "room", "created_by", "created_at"]
    list_filter = ["room", "created_at"]
    search_fields = ["title", "objective", "constraints", "room__name"]
    list_select_related = ["room", "created_by"]
    # The intent file in the room's repository is what sessions read: a task is made
    # (task_create) and its intent edited (task_update_intent) on the web, which commit it.
    readonly_fields = _field_names(Task)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "id", "task", "room", "agent", "attempt", "state", "step", "tokens_input", "tokens_cached", "tokens_output",
        "duration", "created_at",
    ]
    list_filter = ["state", "origin", "agent", ("task__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["task__title", "agent__name", "task__room__name", "reason", "branch", "lease_owner"]
    list_select_related = ["task", "task__room", "agent"]
    # The state machine, the workers and the runtime own every column (state, lease,
    # wake times, the JSON state, the counters): staff change a session only through the
    # actions below, which call the services the web calls.
    readonly_fields = _field_names(Session)
    actions = ["dispatch_retry", "cancel"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Session]:
        # Lists and actions never read the JSON state (megabytes a row); a change page
        # that shows it loads it then.
        return super().get_queryset(request).defer(*_SESSION_BULK)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a session starts through session_start (its event log, its queue turn)

    @admin.display(ordering="task__room__name")
    def room(self, session: Session) -> str:
        return session.task.room.name

    @admin.display(description="duration")
    def duration(self, session: Session) -> str:
        return session_duration(session)

    @admin.action(permissions=["change"], description="Dispatch retry (attempt N+1 of each selected, ended session)")
    def dispatch_retry(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        dispatched, refused = [], []
        for session in queryset.select_related("task", "task__room", "agent").order_by("pk"):
            try:
                # Staff act from the admin without being room members; recorded as dispatcher.
                retry = session_retry(session=session, actor=None, dispatched_by=request.user)
            except RoomError as exc:
                refused.append(f"Session {session.pk} not retried: {exc.message}")
            else:
                self.log_change(request, retry, f"Dispatched as a retry of session {session.pk}.")
                dispatched.append(f"session {retry.pk} (attempt {retry.attempt} of {session.agent.name} "
                                  f"on “{session.task.title}”, after attempt {session.attempt})")
        if dispatched:
            self.message_user(request, "Retry dispatched: " + "; ".join(dispatched) + ".", messages.SUCCESS)
        for refusal in refused:
            self.message_user(request, refusal, messages.WARNING)

    @admin.action(permissions=["change"], description="Cancel the selected sessions")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        cancelled, refused = [], []
        reason = f"cancelled by {request.user.get_username()} in the admin"
        for session in queryset.select_related("task", "task__room", "agent").order_by("pk"):
            try:
                session_cancel(session=session, actor=None, reason=reason)
            except RoomError as exc:
                refused.append(f"Session {session.pk} not cancelled: {exc.message}")
            else:
                self.log_change(request, session, reason)
                cancelled.append(f"session {session.pk}")
        if cancelled:
            self.message_user(request, "Cancelled " + ", ".join(cancelled) + ".", messages.SUCCESS)
        for refusal in refused:
            self.message_user(request, refusal, messages.WARNING)


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ["session", "seq", "kind", "summary", "created_at"]
    list_filter = ["kind", ("session__task__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["kind", "session__task__title", "session__agent__name"]
    list_select_related = ["session", "session__agent", "session__task"]
    readonly_fields = ["session", "seq", "kind", "payload", "created_at"]

    @admin.display(description="payload")
    def summary(self, event: SessionEvent) -> str:
        text = ", ".join(f"{k}={v}" for k, v in event.payload.items() if not isinstance(v, (dict, list)))
        return text[:120]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the log is append-only, written by the runtime


@admin.register(AgentMention)
class AgentMentionAdmin(admin.ModelAdmin):
    list_display = ["sender", "session", "state", "reason", "created_at", "delivered_at"]
    list_filter = ["state", ("session__task__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["sender__name", "session__agent__name", "reason", "message__text"]
    list_select_related = ["sender", "session", "session__agent", "session__task"]
    readonly_fields = _field_names(AgentMention)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by the post that mentions, judged by the mention guard


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    """Review rounds are the runtime's and people's (the session page decides them): read here."""

    list_display = ["session", "round", "state", "reviewer", "decided_by", "created_at", "decided_at"]
    list_filter = ["state", "created_at"]
    search_fields = ["session__task__title", "reasons"]
    list_select_related = ["session", "session__agent", "session__task", "reviewer", "decided_by"]
    readonly_fields = _field_names(Review)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ProviderCall)
class ProviderCallAdmin(admin.ModelAdmin):
    list_display = [
        "session", "step", "model", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
        "reasoning_tokens", "projected_tokens", "cost_usd", "latency_ms", "failed", "created_at",
    ]
    list_filter = ["model", ("session__task__room", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["model", "prefix_hash", "error"]
    list_select_related = ["session", "session__agent", "session__task"]
    raw_id_fields = ["session"]

    @admin.display(boolean=True, description="error")
    def failed(self, call: ProviderCall) -> bool:
        return bool(call.error)


class ApprovalRuleAdminForm(forms.ModelForm):
    """The checks a rule made on the web passes (sessions.approval_rules.rule_checked), here too."""

    class Meta:
        model = ApprovalRule
        fields = ["room", "tool", "path_glob", "command_prefix", "decision", "created_by"]

    def clean(self):
        cleaned = super().clean()
        try:
            cleaned.update(rule_checked(tool=cleaned.get("tool", ""), path_glob=cleaned.get("path_glob", ""),
                                        command_prefix=cleaned.get("command_prefix", ""),
                                        decision=cleaned.get("decision", "")))
        except RoomError as exc:
            raise forms.ValidationError(exc.message) from exc
        return cleaned


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(admin.ModelAdmin):
    form = ApprovalRuleAdminForm
    list_display = ["room", "tool", "path_glob", "command_prefix", "decision", "created_by", "created_at"]
    list_filter = ["decision", "tool", "room"]
    search_fields = ["tool", "path_glob", "command_prefix", "room__name"]
    list_select_related = ["room", "created_by"]


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    list_display = ["session", "tool", "call_id", "state", "always", "decided_by", "created_at", "expires_at",
                    "decided_at"]
    list_filter = ["state", "tool", "always", ("session__task__room", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["tool", "call_id", "session__task__title", "session__agent__name"]
    list_select_related = ["session", "decided_by"]
    # A decision is a compare-and-swap on the pending state followed by the session's
    # wake (approval_decide): never an edited field.
    readonly_fields = _field_names(Approval)
    actions = ["approve", "deny", "approve_always"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # requested by a running session (approval_request)

    @admin.action(permissions=["change"], description="Approve the selected pending calls")
    def approve(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._decide(request, queryset, "approve")

    @admin.action(permissions=["change"], description="Deny the selected pending calls")
    def deny(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._decide(request, queryset, "deny")

    @admin.action(permissions=["change"], description="Approve the selected calls, and the same kind of call for the rest of their sessions")
    def approve_always(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._decide(request, queryset, "always")

    def _decide(self, request: HttpRequest, queryset: QuerySet[Approval], decision: str) -> None:
        decided, refused = [], []
        for approval in queryset.select_related("session", "session__task", "session__task__room").order_by("pk"):
            try:
                # The web's service: the same CAS (a call decided meanwhile is refused) and wake.
                approval_decide(approval=approval, actor=request.user, decision=decision, as_staff=True)
            except RoomError as exc:
                refused.append(f"{approval.tool} call {approval.call_id} of session {approval.session_id} "
                               f"not decided: {exc.message}")
            else:
                self.log_change(request, approval, f"{decision} in the admin")
                decided.append(f"{approval.tool} call {approval.call_id} ({approval.state})")
        if decided:
            self.message_user(request, "Decided: " + "; ".join(decided) + ".", messages.SUCCESS)
        for refusal in refused:
            self.message_user(request, refusal, messages.WARNING)
