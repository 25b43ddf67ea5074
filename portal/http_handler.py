"""Django's ASGI handler with its middleware and view run as one synchronous call.

Every view of the portal is synchronous, and so is most of its middleware (the portal's own,
WhiteNoise's). Django's stock ASGI handler builds the middleware chain in async mode: each
boundary between a sync-only and an async-capable middleware becomes a hop between the event loop
and a worker thread, and an async-mode `MiddlewareMixin` runs each of its hooks through
`sync_to_async`, one more hop per hook. With this project's thirteen middleware that was about
a dozen hops per request: 7 ms of the server's CPU for `/healthz` on the 2-core CI machine, more
than the view itself for most API reads.

Here the chain is loaded in sync mode, as under WSGI (and as the test client runs it), and the
whole of it runs in one hop to the thread Django would have run the view on. Reading the body,
the request signals, sending the response and noticing a client's disconnect stay Django's own.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class SyncChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async=False):
        # ASGIHandler.__init__ asks for the async chain; every view and most middleware here are
        # sync, so the sync chain is the one with no hops inside it.
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        # BaseHandler.get_response: urlconf, the chain, the request's closers, the 4xx/5xx log.
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)
