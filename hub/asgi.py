"""ASGI entry point: HTTP through Django (the gateway endpoint through its own handler,
hub.gateway_handler), websockets through Channels."""

from __future__ import annotations

import os
from importlib import import_module

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hub.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from hub.body_limit import install as bound_request_bodies  # noqa: E402
from hub.gateway_handler import ByPath, GatewayHandler  # noqa: E402
from hub.gc_freeze import freeze_startup_objects  # noqa: E402
from hub.origins import OriginValidator  # noqa: E402
from hub.routing import websocket_urlpatterns  # noqa: E402
from hub.unparsed_forms import install as leave_forms_to_django  # noqa: E402

bound_request_bodies()  # in Daphne's HTTP protocol, before a body is read (hub.body_limit)
leave_forms_to_django()  # Twisted's parse of a form's body, which Daphne never reads (hub.unparsed_forms)

application = ProtocolTypeRouter(
    {
        "http": ByPath(gateway=GatewayHandler(), pages=django_asgi_app),
        # Origin by scheme, host and port (hub.origins), then the session's user.
        "websocket": OriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
import_module(settings.ROOT_URLCONF)  # every view, imported now rather than by the first request
freeze_startup_objects()
