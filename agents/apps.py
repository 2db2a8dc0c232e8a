import logging

from django.apps import AppConfig
from django.conf import settings


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        if settings.ATRIUM_SANDBOX == "off":
            # Every process says it at start (web, workers, beat, commands): loudly.
            from agents.confinement import OPT_OUT_WARNING

            logging.getLogger("agents.sandbox").warning(OPT_OUT_WARNING)
