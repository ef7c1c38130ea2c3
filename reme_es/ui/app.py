"""`reme-es ui`: a server-rendered Starlette app over one cluster, acting with the credentials it was started with.

Safety (docs/ui.md): read-only unless started with `allow_writes`; a write needs the run's token (an HttpOnly,
SameSite=Strict cookie set by opening the printed `/?token=...` link, compared in constant time) and the form's CSRF
value (derived from the token); on a non-loopback bind every page needs the token. Credentials never reach a page: the
app holds them, the browser only sees what the pages render. Browsing writes nothing (no feedback, no usage counts).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..core.errors import ReMeESError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from ..core.options import Options
    from ..store import MemoryStore

COOKIE = "reme_es_ui_token"
TEMPLATES = Path(__file__).with_name("templates")


@dataclass
class UiConfig:
    """What the app runs with: the CLI's settings and client, the index set, the run's token and its rights."""

    settings: Options
    client: tuple[Any, str]  # (ClientSettings, engine)
    prefix: str
    token: str
    allow_writes: bool = False
    remote: bool = False  # bound to a non-loopback address: every page needs the token
    stores: dict[tuple[str, str | None], MemoryStore] = field(default_factory=dict)
    embedders: dict[str, Any] = field(default_factory=dict)

    def csrf(self) -> str:
        """The CSRF value forms carry: derived from the token, so it is per run and never the token itself."""
        return hmac.new(self.token.encode(), b"reme-es-ui csrf", hashlib.sha256).hexdigest()

    async def store(self, workspace: str | None = None) -> MemoryStore:
        """The set's store for `workspace` (None: the set as a whole), opened once and kept for the run."""
        from ..store.connect import open_store

        key = (self.prefix, workspace)
        if key not in self.stores:
            cs, engine = self.client
            self.stores[key] = await open_store(
                cs, self.prefix, engine, self.settings.index, create=False, workspace=workspace,
                search=self.settings.search,
            )  # fmt: skip
        return self.stores[key]

    async def query_vector(self, store: MemoryStore, query: str) -> list[float] | None:
        """The query's vector from the model the index records (None when the index has no vectors or no model); the
        embedder is made once per model for the run."""
        from ..embeddings.embedders import recorded_embedder

        if not store.dims:
            return None
        model = await store.admin.vectors_model()
        key = repr(sorted((model or {}).items()))
        if key not in self.embedders:
            secret = self.settings.sync.embedding_api_key
            self.embedders[key] = await recorded_embedder(store, secret.get_secret_value() if secret else None)
        embedder = self.embedders[key]
        if embedder is None:
            return None
        return (await asyncio.to_thread(embedder.embed_queries, [query]))[0]

    async def close(self) -> None:
        """Close every store opened."""
        for store in self.stores.values():
            await store.close()
        self.stores.clear()


def _token_ok(config: UiConfig, given: str | None) -> bool:
    """Whether `given` is the run's token (constant-time compare)."""
    return bool(given) and hmac.compare_digest(given.encode(), config.token.encode())  # type: ignore[union-attr]


def build_app(config: UiConfig, extra_routes: list[BaseRoute] | None = None) -> Starlette:
    """The app. `extra_routes` are mounted beside the pages (a place for `/metrics`)."""
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.routing import Route
        from starlette.templating import Jinja2Templates
    except ImportError as exc:  # pragma: no cover - the hint is the point
        raise ReMeESError("reme-es ui needs the ui extra: pip install 'reme-es[ui]'") from exc
    from contextlib import asynccontextmanager

    from . import pages

    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.globals.update(quote=lambda s: quote(str(s), safe=""), writes=config.allow_writes)

    @asynccontextmanager
    async def lifespan(app):
        yield
        await config.close()

    routes = [Route(path, endpoint, methods=methods) for path, endpoint, methods in pages.ROUTES]
    routes.append(Route("/metrics", _metrics, methods=["GET"]))
    app = Starlette(
        routes=[*routes, *(extra_routes or [])],
        middleware=[Middleware(_Guard, config=config)],
        lifespan=lifespan,
    )
    app.state.config, app.state.templates = config, templates
    return app


async def _metrics(request):
    """This process's reme-es metrics as Prometheus text (docs/operations.md), or 501 with the install hint."""
    from starlette.responses import PlainTextResponse, Response

    from ..core import prometheus

    try:
        return Response(prometheus.text(), media_type=prometheus.content_type())
    except ReMeESError as exc:
        return PlainTextResponse(str(exc), 501)


class _Guard:
    """ASGI middleware: the token cookie from `?token=`, the token on every page of a remote bind, and on every write
    the writes flag, the token and the CSRF value (403 otherwise)."""

    def __init__(self, app, config: UiConfig):
        self.app, self.config = app, config

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, RedirectResponse

        request = Request(scope, receive)
        given = request.query_params.get("token")
        if given is not None:
            if not _token_ok(self.config, given):
                return await PlainTextResponse("wrong token", 403)(scope, receive, send)
            response = RedirectResponse(request.url.remove_query_params("token"), 303)
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
            return await response(scope, receive, send)
        has_token = _token_ok(self.config, request.cookies.get(COOKIE))
        if self.config.remote and not has_token:
            return await PlainTextResponse("open the link with the run's token", 403)(scope, receive, send)
        if request.method not in ("GET", "HEAD"):
            body = await request.body()
            refused = _write_refusal(self.config, request, has_token, body)
            if refused:
                return await PlainTextResponse(refused, 403)(scope, receive, send)
            receive = _replay(body)  # the body was read here: the page reads it again
        return await self.app(scope, receive, send)


def _replay(body: bytes):
    """An ASGI `receive` that gives `body` once, then waits for the client to go."""
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # nothing more comes: as a client that keeps the connection open

    return receive


def _write_refusal(config: UiConfig, request: Request, has_token: bool, body: bytes) -> str | None:
    """Why a write is refused (None: allowed): read-only run, no token, a foreign origin, or a wrong CSRF value."""
    if not config.allow_writes:
        return "read-only: start reme-es ui with --allow-writes to forget files or workspaces"
    if not has_token:
        return "this write needs the run's token: open the link reme-es ui printed"
    origin = request.headers.get("origin")
    if origin and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
        return "cross-origin write refused"
    from urllib.parse import parse_qs

    csrf = (parse_qs(body.decode("utf-8", "replace")).get("csrf") or [""])[0]
    if not hmac.compare_digest(csrf.encode(), config.csrf().encode()):
        return "missing or wrong CSRF value: reload the page and try again"
    return None
