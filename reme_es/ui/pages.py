"""The pages of `reme-es ui`: each reads through `ui.data` and renders a template; the two forget forms write."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..core.errors import ReMeESError
from ..core.models import SearchFilter
from . import data
from .graph import neighbourhood_svg

if TYPE_CHECKING:
    from starlette.requests import Request


MODES = ("hybrid", "keyword", "vector")


def _render(request: Request, name: str, context: dict, status: int = 200):
    config = request.app.state.config
    base = {"prefix": config.prefix, "csrf": config.csrf(), "writes": config.allow_writes}
    return request.app.state.templates.TemplateResponse(request, name, {**base, **context}, status_code=status)


def _failed(request: Request, exc: ReMeESError):
    return _render(request, "error.html", {"message": str(exc)}, 502)


async def overview(request: Request):
    """Every workspace of the set with its counts, and the set's settings."""
    config = request.app.state.config
    t0 = time.perf_counter()
    try:
        view = await data.overview(await config.store())
    except ReMeESError as exc:
        return _failed(request, exc)
    return _render(request, "overview.html", {"view": view, "ms": (time.perf_counter() - t0) * 1000})


async def workspace(request: Request):
    """A workspace's files, filterable by a part of their path."""
    ws = request.path_params["ws"]
    contains = request.query_params.get("q", "")
    try:
        rows = await data.files(await request.app.state.config.store(ws), contains)
    except ReMeESError as exc:
        return _failed(request, exc)
    return _render(request, "workspace.html", {"ws": ws, "rows": rows, "q": contains})


async def file(request: Request):
    """One file: front matter, chunks as stored, links in and out, and its drawn neighbourhood."""
    ws, path = request.path_params["ws"], request.query_params.get("path", "")
    try:
        page = await data.file_page(await request.app.state.config.store(ws), path)
    except ReMeESError as exc:
        return _failed(request, exc)
    if page is None:
        return _render(request, "error.html", {"message": f"no file {path!r} in workspace {ws}"}, 404)
    svg = neighbourhood_svg(
        path,
        [x["path"] for x in page["outlinks"]],
        [x["path"] for x in page["inlinks"]],
        lambda p: f"/w/{quote(ws, safe='')}/file?path={quote(p, safe='')}",
    )
    front = json.dumps(page["front_matter"], indent=2, ensure_ascii=False, default=str)
    return _render(request, "file.html", {"ws": ws, "page": page, "svg": svg, "front": front})


def _search_inputs(request: Request) -> dict:
    p = request.query_params
    mode = p.get("mode", "hybrid")
    try:
        limit = max(1, min(100, int(p.get("limit", "10"))))
    except ValueError:
        limit = 10
    return {
        "q": p.get("q", ""),
        "mode": mode if mode in MODES else "hybrid",
        "limit": limit,
        "path_prefix": p.get("path_prefix", ""),
        "start_date": p.get("start_date", ""),
        "end_date": p.get("end_date", ""),
    }


async def search(request: Request):
    """The search playground: the drop-in's default search, each hit with its score after every stage."""
    ws, config = request.path_params["ws"], request.app.state.config
    inputs = _search_inputs(request)
    context: dict = {"ws": ws, "inputs": inputs, "modes": MODES, "out": None}
    if inputs["q"].strip():
        try:
            store = await config.store(ws)
            search_filter = SearchFilter.parse(
                {
                    "start_date": inputs["start_date"] or None,
                    "end_date": inputs["end_date"] or None,
                    "path_prefix": [inputs["path_prefix"]] if inputs["path_prefix"] else [],
                }
            )
            mode = inputs["mode"]
            vector = None if mode == "keyword" else await config.query_vector(store, inputs["q"])
            if vector is None and mode == "hybrid":
                mode, context["note"] = "keyword", "the index has no vectors: BM25 only"
            elif vector is None and mode == "vector":
                raise ReMeESError("the index has no vectors (or records no model): use keyword or hybrid")
            t0 = time.perf_counter()
            out = await data.search(store, inputs["q"], vector, mode, inputs["limit"], search_filter)
            out["ms"] = (time.perf_counter() - t0) * 1000
            for r in out["requests"]:
                r["shown"] = r["body"] if isinstance(r["body"], str) else json.dumps(r["body"], indent=1, default=str)
            context["out"] = out
        except ReMeESError as exc:
            context["error"] = str(exc)
    return _render(request, "search.html", context)


async def forget_form(request: Request):
    """The typed confirmation of forgetting a workspace or one file (only shown with writes allowed)."""
    ws = request.path_params["ws"]
    path = request.query_params.get("path", "")
    return _render(request, "forget.html", {"ws": ws, "path": path, "expected": path or ws})


async def forget(request: Request):
    """Forget a file's documents (`path` given) or the whole workspace (with expunge), once the typed confirmation
    matches; the guard has checked the writes flag, the token and the CSRF value."""
    from starlette.responses import RedirectResponse

    ws, config = request.path_params["ws"], request.app.state.config
    form = await request.form()
    path, typed = str(form.get("path", "")), str(form.get("confirm", ""))
    expected = path or ws
    if typed != expected:
        message = f"nothing forgotten: type {expected!r} exactly to confirm"
        return _render(request, "forget.html", {"ws": ws, "path": path, "expected": expected, "error": message}, 400)
    try:
        store = await config.store(ws)
        if path:
            await store.delete([path])
            return RedirectResponse(f"/w/{quote(ws, safe='')}", 303)
        await store.drop_workspace(expunge=True)
    except ReMeESError as exc:
        return _failed(request, exc)
    await config.stores.pop((config.prefix, ws)).close()
    return RedirectResponse("/", 303)


async def memorie(request: Request):
    """A Memorie tenant of the set's prefix: its memories and relations, and a BM25 search of its memories."""
    from ..core.errors import AuthError

    tenant, config = request.path_params["tenant"], request.app.state.config
    inputs = _search_inputs(request)
    try:
        view = await data.memorie_tenant(await config.store(), tenant, inputs["q"], inputs["limit"])
    except AuthError:
        message = (
            f"the credentials reme-es ui runs with may not read Memorie's indices ({config.prefix}-memorie-*): "
            f"ask an admin for a grant of tenant {tenant} (reme-es access grant), or start the UI as a user who has one"
        )
        return _render(request, "error.html", {"message": message}, 403)
    except ReMeESError as exc:
        return _failed(request, exc)
    for r in (view.get("search") or {}).get("requests", []):
        r["shown"] = r["body"] if isinstance(r["body"], str) else json.dumps(r["body"], indent=1, default=str)
    return _render(request, "memorie.html", {"view": view, "inputs": inputs})


async def access(request: Request):
    """The set's grants and a snapshot repository's snapshots, read-only."""
    config = request.app.state.config
    repo = request.query_params.get("repo", "")
    view = await data.access(config.client, config.prefix, repo)
    return _render(request, "access.html", {"view": view})


ROUTES = [
    ("/access", access, ["GET"]),
    ("/", overview, ["GET"]),
    ("/w/{ws}", workspace, ["GET"]),
    ("/w/{ws}/file", file, ["GET"]),
    ("/w/{ws}/search", search, ["GET"]),
    ("/w/{ws}/forget", forget_form, ["GET"]),
    ("/w/{ws}/forget", forget, ["POST"]),
    ("/m/{tenant}", memorie, ["GET"]),
]
