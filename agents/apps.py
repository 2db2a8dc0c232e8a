import logging

from django.apps import AppConfig
from django.conf import settings


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        from agents import receivers
        from agents.evals.ledger import store_replay_verdicts
        from observations.signals import replay_compared

        replay_compared.connect(store_replay_verdicts, dispatch_uid="agents.evals.replay_verdicts")
        receivers.connect()  # what rooms' events mean for agents (rooms.signals)
        if settings.ATRIUM_SANDBOX == "off":
            # Every process says it at start (web, workers, beat, commands): loudly.
            from agents.runtime.confinement import OPT_OUT_WARNING

            logging.getLogger("agents.sandbox").warning(OPT_OUT_WARNING)
