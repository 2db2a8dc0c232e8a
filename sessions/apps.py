from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # "sessions" is django.contrib.sessions' label.
    label = "agent_sessions"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from sessions import receivers

        receivers.connect()  # what rooms' events mean for sessions (rooms.signals)
