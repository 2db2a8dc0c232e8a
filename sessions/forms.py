"""Forms of the room's work and the session page: tasks, starts, steers, approvals, rules."""

from __future__ import annotations

from django import forms

from agents.models import AgentProfile


class IntentText(forms.CharField):
    """A multi-line intent field kept as the person wrote it.

    No stripping (a constraint's own indentation and blank lines are part of it); only
    the CRLF line endings that browsers send for every textarea become LF, so the
    intent file in the repository has plain newlines.
    """

    def __init__(self, *, rows: int = 3, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(strip=False, widget=forms.Textarea(attrs={"rows": rows}), **kwargs)

    def to_python(self, value):
        return super().to_python(value).replace("\r\n", "\n")


class TaskIntentForm(forms.Form):
    objective = IntentText(required=True, help_text="What the agent should achieve.")
    definition_of_done = IntentText(label="Definition of done", help_text="How anyone can tell it is done.")
    prerequisites = IntentText(help_text="What must hold or be read before starting.")
    constraints = IntentText(help_text="Rules in your own words; the agent gets them verbatim, e.g. "
                                       "“Don't change the tests.”")

    def clean_objective(self) -> str:
        objective = self.cleaned_data["objective"]
        if not objective.strip():
            raise forms.ValidationError("Say what the agent should achieve.")
        return objective


class TaskForm(TaskIntentForm):
    title = forms.CharField(max_length=200)

    field_order = ["title", "objective", "definition_of_done", "prerequisites", "constraints"]


class SessionStartForm(forms.Form):
    """Start a task with one of the room's agents (the button pressed names it)."""

    agent = forms.ModelChoiceField(queryset=AgentProfile.objects.none(),
                                   error_messages={"invalid_choice": "Pick an agent assigned to this room."})

    def __init__(self, *args, room, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = AgentProfile.objects.filter(room_agents__room=room)


class SteerForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Tell the agent something; "
                                                        "it reads it at its next step boundary."}),
                           error_messages={"required": "Write what the agent should hear."})
    replaces = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple,
        label="It replaces", help_text="Earlier instructions this one takes the place of: every later handoff "
        "marks them superseded.",
    )

    def __init__(self, *args, decisions=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # A task constraint changes with the intent, not by a steer.
        self.fields["replaces"].choices = [
            (d.number, f"{d.label}: {d.text if len(d.text) <= 80 else d.text[:79] + '…'}")
            for d in decisions if d.in_force and d.kind != "constraint"
        ]


class ApprovalDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny"),
                                          ("always", "Always, for this session")])


def _tool_choices() -> list[tuple[str, str]]:
    return [("*", "every tool"), *_call_choices()]


def _call_choices() -> list[tuple[str, str]]:
    from sessions.approval_rules import TOOL_NAMES

    return [(name, name) for name in TOOL_NAMES]


class ApprovalRuleForm(forms.Form):
    """Checked again, with reasons, by sessions.approval_rules.rule_checked in the service."""

    tool = forms.ChoiceField(choices=_tool_choices)
    path_glob = forms.CharField(max_length=300, required=False, label="Path glob",
                                widget=forms.TextInput(attrs={"placeholder": "src/**/*.py"}),
                                help_text="File tools: e.g. src/**/*.py (by folders: src/* is src's files).")
    command_prefix = forms.CharField(max_length=300, required=False, label="Command prefix",
                                     widget=forms.TextInput(attrs={"placeholder": "python -m pytest"}),
                                     help_text="shell: e.g. python -m pytest. Allow covers it run alone; deny "
                                               "catches it however it is started.")
    decision = forms.ChoiceField(choices=[("allow", "allow"), ("ask", "ask"), ("deny", "deny")])


class RulePreviewForm(forms.Form):
    tool = forms.ChoiceField(choices=_call_choices, initial="shell")
    sample = forms.CharField(max_length=2000, required=False, label="Sample",
                             widget=forms.TextInput(attrs={"placeholder": "a command line, or a path"}))
