"""The intake routes, served straight from the ASGI scope rather than through FastAPI's router.

A webhook delivery is the one request the daemon must answer in about a millisecond, at
thousands per second, while an unauthenticated one costs almost nothing (SPEC §11, §13).
FastAPI's routing (matching every route in turn, solving the endpoint's dependencies, the
exception middleware around it) cost about as much CPU per delivery as the endpoint's own work
(decision 0037). ``DirectRoutes`` is an ASGI middleware placed inside Starlette's error
middleware: a ``POST`` to one of its paths goes to the same endpoint function FastAPI has
registered there, with a plain ``Request``; every other request (another method on that path
included, answered 405 as before) goes on to FastAPI unchanged. The table is read from the
routers themselves (``post_endpoints``), so both ways reach the same code and a route added to
them is served directly too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import cast

from fastapi.routing import APIRoute, APIRouter
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]
"""A route's handler: the request in, the whole response out."""
OnError = Callable[[Exception], Response]
"""The response the app's exception handlers give one of the errors they handle."""


def post_endpoints(routers: Iterable[APIRouter]) -> dict[str, Endpoint]:
    """The ``POST`` endpoints of ROUTERS by path (each takes the request alone)."""
    return {
        route.path: cast(Endpoint, route.endpoint)
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute) and "POST" in (route.methods or ())
    }


class DirectRoutes:
    """Serve ``POST`` to each path of ROUTES with its endpoint (an error of a HANDLED type
    answered by ON_ERROR); everything else goes to APP."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Mapping[str, Endpoint],
        handled: tuple[type[Exception], ...],
        on_error: OnError,
    ) -> None:
        self.app = app
        self.routes = dict(routes)
        self.handled = handled
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.routes.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            response = await endpoint(Request(scope, receive))
        except self.handled as exc:  # answered as the app's own exception handlers answer it
            response = self.on_error(exc)
        await response(scope, receive, send)
