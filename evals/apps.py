from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evals"

    def ready(self) -> None:
        from django.conf import settings

        from agents.providers.factory import register_file_kind
        from evals.ledger import store_replay_verdicts
        from evals.provider import ScriptProvider
        from observations.signals import replay_compared

        replay_compared.connect(store_replay_verdicts, dispatch_uid="evals.replay_verdicts")
        # script:<scenario>: the agent's side of an eval, from the hub's eval folder.
        register_file_kind("script", lambda name: ScriptProvider.from_script(name, script_dir=settings.EVAL_SCRIPTS_DIR))
