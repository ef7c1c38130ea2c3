"""The index port: every operation the store and maintenance need from a cluster, typed, with REST paths inside.

Above `adapters/` nothing names a REST path, a bulk `_op_type` or a response's JSON layout: the store speaks
in `Action`s and in the answers these methods return (`documents.py`). The port sends through the dialect's
transport (`request`, `bulk`: looked up at call time, so a test or benchmark that wraps them sees every call). Bodies
of searches come from the dialect's pure builders and `lookups`; this module adds only the envelopes.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import urllib.parse
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from typing import Any

from ..core.checks import redact_host
from ..core.errors import RequestFailed
from . import documents
from . import lookups as q
from .dialect import Dialect, candidates_only
from .documents import Action, Candidate, StoredDoc, Timed, or_none, unavailable
from .error_map import index_missing
from .identity import ClusterIdentity, check_request
from .index_calls import IndexCalls
from .scope import Scope
from .transport import BulkOutcome

log = logging.getLogger(__name__)

REFRESH_WAIT = 10.0  # seconds a refresh may take before the port asks whether an index lost its primary shards
SEARCH_WAIT = 1.0  # the same for a search, which the shared policy retries on 503


class IndexPort(IndexCalls):
    """Typed index operations over one dialect's transport, on the cluster `identity` recorded (see `identity`), for
    the documents of one workspace (`scope`: ids, routing and look-up queries; see `reme_es.adapters.scope`)."""

    def __init__(self, dialect: Dialect, scope: Scope | None = None):
        self.dialect = dialect  # builds the bodies and knows the engine
        self.identity = ClusterIdentity(self)
        # sends every request of this port: the dialect's transport with the cluster check before each try (a view of
        # it: the dialect's own transport is not changed)
        self.transport = dialect.transport.guarded(self.identity)
        self.scope = scope or Scope()

    @property
    def hosts(self) -> list[str]:
        """The hosts this port sends to."""
        return self.transport.settings.hosts

    async def close(self) -> None:
        """Close the client's connections (every port and store on this dialect shares them)."""
        await self.transport.close()

    async def cluster_answer(self, indices: str, once: bool = False) -> Any:
        """The answer of the cluster check's request (`identity.check_request`, restricted to `indices`), sent past
        the check itself (through the dialect's own transport); `once`: one try, not retried."""
        engine = "elasticsearch" if self.dialect.engine == "elasticsearch" else "opensearch"
        path, query = check_request(engine, indices)
        if once:
            return await self.dialect.transport.send_once("GET", path, None, query)
        return await self.dialect.transport.request("GET", path, None, query)

    def unscoped(self) -> IndexPort:
        """This port for every workspace of the set (ids and routing as stored): same client and cluster identity."""
        other = copy.copy(self)
        other.scope = Scope()
        return other

    def stored_id(self, key: str) -> str:
        """The stored document id of `key` in this port's workspace (for ids written into query bodies)."""
        return self.scope.stored_id(key)

    def _scoped_actions(self, actions: list[Action]) -> tuple[list[dict], dict[str, str]]:
        """Bulk items of `actions` in this workspace (ids, routing, the workspace field), and stored id -> given id."""
        scope, items, given = self.scope, [], {}
        for a in actions:
            stored = scope.stored_id(a.id)
            given[stored] = a.id
            source = scope.source(a.source) if a.source is not None and a.op in ("index", "create") else a.source
            items.append(Action(a.op, a.index, stored, source, scope.routing(a.routing), a.version).to_bulk())
        return items, given

    # --- documents ------------------------------------------------------------------------------
    async def bulk(self, actions: list[Action], require_alias: bool = True) -> BulkOutcome:
        """Write actions in bulk (per-item retry of 429/5xx, every failure reported). Each item's index must be an
        alias unless `require_alias` is False (a concrete index being rebuilt): a missing one raises IndexMissing
        (or ClusterChanged when the hosts now reach another cluster), and no index is created in its place."""
        items, given = self._scoped_actions(actions) if self.scope.workspace else ([a.to_bulk() for a in actions], {})
        outcome = await self.transport.bulk(items, require_alias=require_alias)
        if given:  # the caller's ids back, as it gave them
            outcome.versions = {(index, given.get(i, i)): v for (index, i), v in outcome.versions.items()}
            outcome.failures = [replace(f, id=given.get(f.id, f.id)) for f in outcome.failures]
        if missing := outcome.missing_indices():
            await self.identity.verify(force=True)
            hosts = ", ".join(redact_host(h) for h in self.transport.settings.hosts)
            raise index_missing(", ".join(missing), hosts, written=False)
        return outcome

    async def search(self, index: str, body: dict, params: dict | None = None) -> list[dict]:
        """The hits of one search (routed to this workspace's shard)."""
        answer = await self._unless_unavailable(
            [index], self.transport.request("POST", f"/{index}/_search", body, self.scope.params(params))
        )
        documents._note_partial(index, answer)
        return answer["hits"]["hits"]

    async def ranked(
        self, index: str, body: dict, params: dict | None = None, with_hash: bool = False
    ) -> list[Candidate]:
        """Each hit of a search for candidates (`candidates_only` bodies): score, chunk id, path, text hash."""
        return [documents._candidate(h) for h in await self.search(index, candidates_only(body, with_hash), params)]

    async def _msearch(self, searches: list[tuple[str, dict]]) -> list[dict]:
        """The responses of several searches (index, body) in one `_msearch`, in order; a failed one raises."""
        if not searches:
            return []
        out = []
        body = q.msearch_body(searches, self.scope.routing())
        names = sorted({index for index, _ in searches})
        answered = await self._unless_unavailable(names, self.transport.request("POST", "/_msearch", body))
        answers = answered["responses"]
        for (index, _), resp in zip(searches, answers, strict=True):
            if "error" in resp and resp.get("status") == 503:
                await self._raise_if_unavailable([index])
            if "error" in resp:
                error = resp["error"]
                reason = error.get("reason", error) if isinstance(error, dict) else error
                raise RequestFailed(f"search failed: {reason}", status=resp.get("status"))
            documents._note_partial(index, resp)
            out.append(resp)
        return out

    async def aggregations(self, searches: list[tuple[str, dict]]) -> list[dict]:
        """The `aggregations` of several size-0 searches (index, body) in one `_msearch`, over every workspace the
        credentials may read (document-level security applies), and each search's total hits as `_total`."""
        answers = await self.unscoped()._msearch(searches)
        return [{**resp.get("aggregations", {}), "_total": resp["hits"]["total"]["value"]} for resp in answers]

    async def hits_and_totals(self, searches: list[tuple[str, dict]]) -> list[tuple[list[dict], int]]:
        """The hits and total hits of several searches (index, body) in one `_msearch`, over every workspace the
        credentials may read (document-level security applies): for indices of the set as a whole, as Memorie's."""
        answers = await self.unscoped()._msearch(searches)
        return [(resp["hits"]["hits"], int(resp["hits"]["total"]["value"])) for resp in answers]

    async def msearch(self, searches: list[tuple[str, dict]]) -> list[list[dict]]:
        """The hits of several searches (index, body) in one `_msearch`, in order; a failed one raises."""
        return [resp["hits"]["hits"] for resp in await self._msearch(searches)]

    async def health_counts(self, files: str, chunks: str, links: str) -> dict[str, int]:
        """Files, chunks, chunks with an embedding and links (as of the last refresh), in one `_msearch`."""
        queries = [(files, None), (chunks, None), (chunks, q.with_field("embedding")), (links, None)]
        return dict(zip(("files", "chunks", "vectors", "links"), await self.counts(queries)))

    async def counts(self, queries: list[tuple[str, dict | None]]) -> list[int]:
        """Documents of each (index, look-up query or None for all) in one `_msearch` (as of the last refresh)."""
        answers = await self._msearch([(index, q.count_body(self.scope.query(query))) for index, query in queries])
        return [int(resp["hits"]["total"]["value"]) for resp in answers]

    async def ranked_many(self, index: str, bodies: list[dict], with_hash: bool = False) -> list[list[Candidate]]:
        """`ranked` of several searches of one index in one `_msearch` (no hit totals counted)."""
        answers = await self.msearch([(index, q.lean(candidates_only(b, with_hash))) for b in bodies])
        return [[documents._candidate(h) for h in hits] for hits in answers]

    async def ranked_and_sources(
        self, index: str, bodies: list[dict], sourced: list[dict], with_hash: bool = False
    ) -> tuple[list[list[Candidate]], list[list[dict]]]:
        """`ranked_many` of `bodies` and the `_source` of every hit of the `sourced` searches, in one `_msearch`."""
        searches = [(index, q.lean(candidates_only(b, with_hash))) for b in bodies]
        searches += [(index, q.lean(b)) for b in sourced]
        answers = await self.msearch(searches)
        ranked = [[documents._candidate(h) for h in hits] for hits in answers[: len(bodies)]]
        return ranked, [[self.scope.unsource(h["_source"]) for h in hits] for hits in answers[len(bodies) :]]

    async def ranked_named(
        self, index: str, body: dict, params: dict | None = None, with_hash: bool = False
    ) -> list[tuple[Candidate, dict[str, float]]]:
        """`ranked`, with each hit's named sub-query scores (`matched_queries` asked for with their scores; {} else)."""
        hits = await self.search(index, candidates_only(body, with_hash), params)
        return [(documents._candidate(h), documents._named_scores(h)) for h in hits]

    async def ranked_sources(self, index: str, body: dict) -> list[tuple[float, dict]]:
        """(score, `_source`) of each hit of a search (`search`'s request, sent from here: the keyword path stays three
        frames above the send, tests/unit/test_keyword_frames.py)."""
        answer = await self._unless_unavailable(
            [index], self.transport.request("POST", f"/{index}/_search", body, self.scope.params(None))
        )
        documents._note_partial(index, answer)
        return [(float(h["_score"]), h["_source"]) for h in answer["hits"]["hits"]]

    async def looked_up(self, searches: list[tuple[str, dict]]) -> list[list[dict]]:
        """The `_source` of each hit of several look-ups (index, `lookups` body) in one `_msearch`, in order, each
        look-up's query confined to this workspace (`scope.query`); a failed one raises."""
        scoped = [(index, {**body, "query": self.scope.query(body["query"])}) for index, body in searches]
        return [[h["_source"] for h in hits] for hits in await self.msearch(scoped)]

    async def timed_searches(self, index: str, bodies: list[dict], what: str) -> list[Timed]:
        """Searches of `index` in one `_msearch` run one at a time (so each answer's `took` is its own search's),
        routed to this workspace: per search its server time and its hits' (stored id, score). A failed one raises
        RequestFailed naming `what`."""
        body = q.msearch_body([(index, b) for b in bodies], self.scope.routing())
        answered = await self.transport.request("POST", "/_msearch", body, {"max_concurrent_searches": 1})
        out = []
        for answer in answered["responses"]:
            if "error" in answer:
                raise RequestFailed(f"{what} failed: {str(answer['error'])[:600]}", status=answer.get("status"))
            out.append(Timed(float(answer.get("took", 0)), [(h["_id"], h["_score"]) for h in answer["hits"]["hits"]]))
        return out

    async def scan(
        self, index: str, query: dict, source: list[str] | dict | bool, sort: list[str]
    ) -> AsyncIterator[dict]:
        """Yield the `_source` of every matching doc, sorted, without a 10,000-hit window."""
        after, query = None, self.scope.query(query)
        while True:
            hits = await self.search(index, q.scan_body(query, source, sort, after))
            for hit in hits:
                yield self.scope.unsource(hit["_source"])
            if len(hits) < q.SCAN_PAGE:
                return
            after = hits[-1]["sort"]

    async def get(self, index: str, ids: list[str], source: bool = True) -> list[StoredDoc]:
        """The found docs of these ids (real-time), with their versions; sources unless `source` is False."""
        if not ids:
            return []
        params = self.scope.params(None if source else {"_source": "false"})
        given = {self.scope.stored_id(i): i for i in ids}
        resp = await self.transport.request("POST", f"/{index}/_mget", q.mget_ids(list(given)), params)
        return [documents._stored(d, given, self.scope) for d in resp["docs"] if d.get("found")]

    async def get_one(self, index: str, doc_id: str, routing: str | None = None) -> dict | None:
        """One document's `_source` by its stored id (real-time), None when it does not exist."""
        params = {"routing": routing} if routing else None
        found = await or_none(
            self.transport.request("GET", f"/{index}/_doc/{urllib.parse.quote(doc_id, safe='')}", params=params)
        )
        return found["_source"] if found and found.get("found") else None

    async def get_routed(
        self,
        index: str,
        docs: list[tuple[str, str]],
        excludes: list[str] | None = None,
        realtime: bool = True,
        with_vectors: bool = False,
    ) -> list[dict | None]:
        """Routed docs by (id, routing), in order: each doc's `_source`, or None where it is not found.
        `with_vectors`: the sources carry their vectors (an engine may keep them out of `_source` by default)."""
        if not docs:
            return []
        params: dict[str, str] = dict(self.dialect.vector_read_params()) if with_vectors else {}
        if excludes:
            params["_source_excludes"] = ",".join(excludes)
        if not realtime:
            params["realtime"] = "false"
        docs = [(self.scope.stored_id(i), self.scope.routing(r)) for i, r in docs]
        resp = await self.transport.request("POST", f"/{index}/_mget", q.mget_routed(docs), params or None)
        return [self.scope.unsource(d["_source"]) if d.get("found") else None for d in resp["docs"]]

    async def link_edges(self, index: str, paths: list[str], per_direction: int) -> list[list[dict]]:
        """Per path its first outlinks, then per path its first inlinks (sources of link docs), in one `_msearch`."""
        body = q.link_expansion_msearch(index, paths, per_direction, self.scope.query, self.scope.routing())
        out = []
        for resp in (await self.transport.request("POST", "/_msearch", body))["responses"]:
            if "error" in resp:
                raise RequestFailed(f"link expansion failed: {resp['error']}", status=resp.get("status"))
            out.append([hit["_source"] for hit in resp["hits"]["hits"]])
        return out

    async def count(self, index: str, query: dict | None = None) -> int:
        """Documents in an index (as of its last refresh), optionally only those `query` matches."""
        if query is None and not self.scope.workspace:
            return (await self.transport.request("GET", f"/{index}/_count"))["count"]
        body = {"query": self.scope.query(query)}
        return (await self.transport.request("POST", f"/{index}/_count", body, self.scope.params()))["count"]

    async def scroll(
        self, index: str, page: int, keep: str = "5m", with_vectors: bool = True
    ) -> AsyncIterator[list[StoredDoc]]:
        """Pages of every doc (id, source, routing) in index order; the scroll is cleared at the end.
        `with_vectors`: the sources carry their vectors (asked for where the engine keeps them out), else not."""
        source = self.dialect.source_with_vectors() if with_vectors else q.without_vectors()
        body = q.scroll_body(page, source, self.scope.query(None))
        resp = await self.transport.request("POST", f"/{index}/_search", body, self.scope.params({"scroll": keep}))
        scroll_id = resp.get("_scroll_id")
        try:
            while hits := resp["hits"]["hits"]:
                yield [documents._stored(hit, None, self.scope) for hit in hits]
                resp = await self.transport.request("POST", "/_search/scroll", {"scroll": keep, "scroll_id": scroll_id})
                scroll_id = resp.get("_scroll_id", scroll_id)
        finally:
            if scroll_id:
                try:
                    await self.transport.request("DELETE", "/_search/scroll", {"scroll_id": [scroll_id]})
                except RequestFailed:
                    pass

    # --- refresh, and indices whose primaries no node holds (index, alias and pipeline calls: index_calls.py) ---
    async def refresh(self, names: list[str]) -> None:
        """Make every finished write to these indices visible to searches. A refresh waits for primary shards that no
        node holds (up to a minute): past REFRESH_WAIT seconds the port asks the cluster and raises IndexUnavailable,
        naming the index, when that is why; a merely slow refresh is waited for."""
        call = self.transport.request("POST", f"/{','.join(names)}/_refresh")
        task = asyncio.ensure_future(call)
        try:
            await asyncio.wait_for(asyncio.shield(task), REFRESH_WAIT)
            return
        except TimeoutError:
            pass
        try:
            await self._raise_if_unavailable(names)
        except BaseException:
            task.cancel()
            raise
        await task

    async def _unless_unavailable(self, names: list[str], call: Awaitable[Any]) -> Any:
        """The call's answer; indices with lost primaries make it IndexUnavailable (named, what to do): at once on a
        503, or when the call (retried under the shared policy) is still unanswered after SEARCH_WAIT seconds."""
        task = asyncio.ensure_future(call)
        try:
            return await asyncio.wait_for(asyncio.shield(task), SEARCH_WAIT)
        except TimeoutError:
            try:
                await self._raise_if_unavailable(names)
            except BaseException:
                task.cancel()
                raise
            return await self._unavailable_or(names, task)
        except RequestFailed as exc:
            if exc.status == 503:
                await self._raise_if_unavailable(names)
            raise

    async def _unavailable_or(self, names: list[str], task: Awaitable[Any]) -> Any:
        try:
            return await task
        except RequestFailed as exc:
            if exc.status == 503:
                await self._raise_if_unavailable(names)
            raise

    async def _raise_if_unavailable(self, names: list[str]) -> None:
        """Raise IndexUnavailable when any of these indices (or aliases) is red; return when none is."""
        try:
            health = await self.transport.request(
                "GET", f"/_cluster/health/{','.join(names)}", params={"level": "indices"}
            )
        except RequestFailed:
            return  # no health API (a managed service): the original error stands
        if error := unavailable(health):
            raise error
