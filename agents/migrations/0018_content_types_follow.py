from django.db import migrations

# Where each moved model lives now, by the app it left.
MOVED = {
    ("agents", "agent_sessions"): ("task", "session", "sessionevent", "agentmention", "providercall", "approvalrule",
                                   "approval", "review"),
    ("observations", "agent_sessions"): ("observation", "ledgerentry", "fold", "segment", "payload", "historyentry",
                                         "staterecord"),
    ("agents", "endpoint"): ("gatewaykey", "gatewayconversation", "gatewayanswer"),
    ("agents", "evals"): ("evalbatch", "evalrun", "evalverdict"),
    ("agents", "rooms"): ("roomagent",),
}


def _relabel(apps, forward: bool) -> None:
    """Content types follow their models, so permissions and the admin's history keep
    pointing at them (a fresh database has none yet: post_migrate makes them)."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for (old, new), models in MOVED.items():
        source, target = (old, new) if forward else (new, old)
        for model in models:
            if not ContentType.objects.filter(app_label=target, model=model).exists():
                ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


class Migration(migrations.Migration):
    dependencies = [
        ('agents', '0017_moved_to_their_apps'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.RunPython(lambda apps, editor: _relabel(apps, True), lambda apps, editor: _relabel(apps, False)),
    ]
