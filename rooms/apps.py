from django.apps import AppConfig


class RoomsConfig(AppConfig):
    name = "rooms"

    def ready(self) -> None:
        from rooms import receivers

        receivers.connect()  # what a profile's change means for rooms (agents.signals)
