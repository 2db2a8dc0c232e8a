from django.apps import AppConfig
from django.conf import settings


class ObservationsConfig(AppConfig):
    name = "observations"

    def ready(self) -> None:
        from observations.blob_store import parse_blob_store

        parse_blob_store(settings.BLOB_STORE)  # a mistyped store stops every process at start-up
