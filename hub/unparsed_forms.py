"""Daphne's requests leave a form's body to Django.

Twisted's HTTP request parses a POST's form body into ``request.args`` once the body is
in, on the event loop that serves every request and socket of the process. Daphne never
reads them: it hands the raw body to the hub, and Django parses it again. A bundle
upload's multipart body was parsed twice, the first time by the email package: some
470 ms for 20 MB in which the hub served nothing else; and a body that parse refused got
Twisted's bare 400, never reaching the hub.
"""

from __future__ import annotations


def install() -> None:
    """Daphne's requests parse no form body (idempotent)."""
    from daphne.http_protocol import WebRequest

    if getattr(WebRequest, "atrium_unparsed", False):
        return
    init = WebRequest.__init__

    def unparsed_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self._parsePOSTFormSubmission = False  # twisted.web.http.Request's switch for it

    WebRequest.__init__ = unparsed_init
    WebRequest.atrium_unparsed = True
