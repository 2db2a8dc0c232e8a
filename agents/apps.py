import logging

from django.apps import AppConfig
from django.conf import settings


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_delete

        # A deleted account's profiles stop spending it (agents.services.creator_deleted).
        pre_delete.connect(_user_deleted, sender=get_user_model(), dispatch_uid="agents.user_deleted")
        if settings.ATRIUM_SANDBOX == "off":
            # Every process says it at start (web, workers, beat, commands): loudly.
            from agents.confinement import OPT_OUT_WARNING

            logging.getLogger("agents.sandbox").warning(OPT_OUT_WARNING)


def _user_deleted(sender, instance, **kwargs) -> None:
    from agents.services import creator_deleted

    creator_deleted(instance)
