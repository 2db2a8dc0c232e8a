from django.apps import AppConfig


class EndpointConfig(AppConfig):
    name = "endpoint"
    verbose_name = "Gateway endpoint"
