"""Django's debug pages (tracebacks, settings, the URL list) only for a developer at the
hub's own machine: with DEBUG on, a request from any other address gets the plain error
page production shows."""

from __future__ import annotations

import ipaddress

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.debug import ExceptionReporter
from django.views.defaults import page_not_found


def is_local(request: HttpRequest | None) -> bool:
    address = (request.META.get("REMOTE_ADDR") or "") if request is not None else ""
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


class LocalOnlyExceptionReporter(ExceptionReporter):
    """The traceback page (500, and the 400 of a suspicious request) for local requests only."""

    def get_traceback_html(self) -> str:
        if self.request is None or is_local(self.request):
            return super().get_traceback_html()
        return render_to_string("500.html")

    def get_traceback_text(self) -> str:
        if self.request is None or is_local(self.request):
            return super().get_traceback_text()
        return "Something went wrong; the error is in the hub's log.\n"


class LocalDebugPagesMiddleware:
    """With DEBUG on, a 404 for anyone but a local developer is the plain page, not the
    one that lists every URL of the hub. (Tracebacks: LocalOnlyExceptionReporter.)
    Async under Daphne: a sync middleware would send every request through a thread."""

    sync_capable = async_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self._answer_async(request)
        response = self.get_response(request)
        return self._plain_404(request) if self._hidden(request, response) else response

    async def _answer_async(self, request: HttpRequest) -> HttpResponse:
        response = await self.get_response(request)
        if self._hidden(request, response):
            # The page reads the person's session and user: database work, off the event loop.
            return await sync_to_async(self._plain_404)(request)
        return response

    @staticmethod
    def _hidden(request: HttpRequest, response: HttpResponse) -> bool:
        return settings.DEBUG and response.status_code == 404 and not is_local(request)

    @staticmethod
    def _plain_404(request: HttpRequest) -> HttpResponse:
        return page_not_found(request, Http404())
