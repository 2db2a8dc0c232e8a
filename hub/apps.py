from django.apps import AppConfig
from django.urls import register_converter


class HubConfig(AppConfig):
    name = "hub"

    def ready(self) -> None:
        from hub.converters import IdConverter

        register_converter(IdConverter, "id")
