from django.db import migrations


class Migration(migrations.Migration):
    """Which session a message belongs to is sessions' now (SessionMessage, which
    agent_sessions 0002 filled from this column)."""

    dependencies = [
        ('agent_sessions', '0002_session_message'),
        ('rooms', '0005_room_agents'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='message',
            name='session',
        ),
    ]
