import django.db.models.deletion
from django.db import migrations, models


def bind_messages(apps, schema_editor):
    """Each room message that named a session (rooms.Message.session, dropped next) is
    bound to it here."""
    Message = apps.get_model("rooms", "Message")
    SessionMessage = apps.get_model("agent_sessions", "SessionMessage")
    rows = Message.objects.filter(session__isnull=False).values_list("pk", "session_id").iterator(chunk_size=2000)
    batch = []
    for message_id, session_id in rows:
        batch.append(SessionMessage(message_id=message_id, session_id=session_id))
        if len(batch) == 2000:
            SessionMessage.objects.bulk_create(batch)
            batch = []
    SessionMessage.objects.bulk_create(batch)


def unbind_messages(apps, schema_editor):
    Message = apps.get_model("rooms", "Message")
    SessionMessage = apps.get_model("agent_sessions", "SessionMessage")
    for link in SessionMessage.objects.all().iterator(chunk_size=2000):
        Message.objects.filter(pk=link.message_id).update(session_id=link.session_id)


class Migration(migrations.Migration):
    dependencies = [
        ('agent_sessions', '0001_initial'),
        ('rooms', '0004_issue9_room_network'),
    ]

    operations = [
        migrations.CreateModel(
            name='SessionMessage',
            fields=[
                ('message', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='session_link', serialize=False, to='rooms.message')),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='agent_sessions.session')),
            ],
        ),
        migrations.RunPython(bind_messages, unbind_messages),
    ]
