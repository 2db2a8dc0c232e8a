from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # "sessions" is django.contrib.sessions' label.
    label = "agent_sessions"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from celery.signals import worker_process_init

        from sessions import receivers
        from sessions.worker import job_journal

        receivers.connect()  # what rooms' events mean for sessions (rooms.signals)
        worker_process_init.connect(job_journal.start_shipping, dispatch_uid="sessions.start_shipping", weak=False)
