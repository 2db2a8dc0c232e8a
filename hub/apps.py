from django.apps import AppConfig


class HubConfig(AppConfig):
    name = "hub"
