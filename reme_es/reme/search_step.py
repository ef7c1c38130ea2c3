"""ReMe's `search` step in two round trips to the cluster: the ranked candidates, then what the answer shows.

Parameters, filters, tags, `min_score`, tool-context de-duplication, link expansion and the answer format are
ReMe's `SearchStep`'s. Only retrieval differs: `EsFileStore.ranked_search` returns the fused candidates from ids and
scores alone (one hybrid request where the server fuses, else both branches in one `_msearch`), and
`EsFileStore.shown` fetches the shown hits' texts with their files' links and neighbour files in one `_msearch`
(inlink sources that are neither hit files nor outlink targets cost one more request, for their front matter). When
the store is not an `EsFileStore`, or the call asks for a vector weight the store's pipeline was not built
with (including 0 and 1), the step runs ReMe's own code path unchanged.
"""

from __future__ import annotations

import asyncio
import datetime

from reme.enumeration import LinkScopeEnum
from reme.steps.file_io import extract_daily_date
from reme.steps.index._source_format import ALL_RETURNED_MESSAGE, NO_RESULTS_MESSAGE
from reme.steps.index.search import SearchStep, _default_limit
from reme.utils import expand_links, render_expansion_lines

from ..core.telemetry import memory_operation
from ..store import CANDIDATE_MULTIPLIER
from ..store.fusion import MAX_CANDIDATES as _MAX_CANDIDATES
from ..store.fusion import RRF_K as _RRF_K
from ..store.one_version import REFILLS
from ..store.shown import Shown
from .convert import to_file_link, to_file_node
from .file_store import EsFileStore


def normalize_date_filters(search_filter: dict, logger) -> None:
    """Normalise `start_date`/`end_date` to YYYY-MM-DD in place, dropping invalid ones (as ReMe does)."""
    for key in ("start_date", "end_date"):
        raw = search_filter.get(key)
        if raw is None:
            continue
        normalized = extract_daily_date(raw)
        if normalized is None:
            try:
                normalized = datetime.datetime.strptime(str(raw).strip(), "%Y-%m-%d").date().isoformat()
            except ValueError:
                logger.warning(f"Ignoring invalid {key}={raw!r}; expected a valid YYYY-MM-DD date.")
                del search_filter[key]
                continue
        search_filter[key] = normalized


class EsSearchStep(SearchStep):
    """ReMe's search step with retrieval and fusion done by the cluster (one request where supported)."""

    def _vector_weight(self, default: float) -> float:
        """The call's vector weight, else the step's, else `default` (the store's own: it fuses with that)."""
        raw = self.context.get("vector_weight")
        weight = None
        if raw is not None:
            try:
                weight = float(raw)
            except (TypeError, ValueError):
                self.logger.warning(f"[{self.name}] non-numeric vector_weight={raw!r}; ignoring")
        if weight is None:
            weight = float(self.kwargs.get("vector_weight", default))
        return max(0.0, min(1.0, weight))

    async def execute(self):
        """Run the search; falls back to ReMe's SearchStep when the store cannot fuse this call natively."""
        assert self.context is not None
        store = self.file_store
        if not isinstance(store, EsFileStore) or not store.hybrid_matches(self._vector_weight(store.vector_weight)):
            return await super().execute()
        response = self.context.response
        response.metadata.pop("empty_result", None)
        raw_query = self.context.get("query")
        query = "" if raw_query is None else str(raw_query).strip()
        limit = int(self.context.get("limit") or _default_limit())
        min_score = float(self.context.get("min_score") or 0.0)
        candidate_multiplier = float(self.kwargs.get("candidate_multiplier", CANDIDATE_MULTIPLIER))
        expand_links_enabled = bool(self.kwargs.get("expand_links", True))
        max_links_per_direction = int(self.kwargs.get("max_links_per_direction", 10))
        tool_context_id = (self.context.get("tool_context_id", "") or "").strip()
        strict_date_filter = bool(
            self.context.get("strict_date_filter") or self.kwargs.get("strict_date_filter", False)
        )

        if not query:
            response.success = False
            response.answer = "Error: query cannot be empty"
            return response
        assert limit > 0, f"limit must be positive, got {limit}"
        if not await self._take_search_budget(tool_context_id):
            return response

        candidates = min(_MAX_CANDIDATES, max(1, int(limit * candidate_multiplier)))
        search_filter = self._date_filter(strict_date_filter)
        raw_tags = self.context.get("tags", []) or []
        search_filter, tag_meta, tag_error = await self._resolve_tag_filter(raw_tags, search_filter)
        if tag_error is not None:
            response.success = False
            response.answer = tag_error
            if tag_meta is not None:
                response.metadata["tag_filter"] = tag_meta
            return response

        # Round trip 1: ids and scores of both branches (fused by the server or here); 2: what the answer shows.
        # One search_memory span for the whole search (the store's `ranked` and `shown` run inside it)
        with memory_operation("search_memory", store.store.store_id if store.store else store.name, query):
            fused, counts, hybrid = await self._retrieve(store, query, candidates, search_filter, min_score, limit)
            pre_dedup_count = len(fused)
            fused, shown, dedup = await self._shown(store, fused, limit, tool_context_id, expand_links_enabled)
            unique_paths = list(dict.fromkeys(c.path for c in fused))
            link_expansion = (
                await expand_links(_Prefetched(store, shown), unique_paths, max_links_per_direction)
                if expand_links_enabled
                else {}
            )
        self._answer(response, fused, counts, hybrid, link_expansion, pre_dedup_count)
        if tag_meta is not None:
            response.metadata["tag_filter"] = tag_meta
        if dedup is not None:
            response.metadata["dedup"] = dedup
        return response

    async def _retrieve(
        self, store: EsFileStore, query: str, candidates: int, search_filter: dict, min_score: float, limit: int
    ):
        """The fused candidates (no texts yet), their counts, and whether they were fused (logged as ReMe does)."""
        fused, counts = await store.ranked_search(query, candidates, search_filter, min_score, limit)
        hybrid = counts["fusion"] in ("native", "client")
        self.logger.info(
            f"[{self.name}] query={query!r} candidates={candidates} fusion={counts['fusion']} hits={len(fused)}"
        )
        if min_score > 0.0 and hybrid and min_score > 1.0 / (_RRF_K + 1):
            self.logger.warning(f"[{self.name}] min_score={min_score:g} is above what fused scores usually reach")
        return fused, counts, hybrid

    async def _shown(
        self, store: EsFileStore, ranked: list, limit: int, tool_context_id: str, with_links: bool
    ) -> tuple[list, Shown, dict | None]:
        """The first `limit` candidates (after ReMe's tool-context de-duplication) with what the answer shows, and the
        de-duplication's figures. A hit `store.shown` leaves out (a chunk of another version of its file than the
        file doc lists, `reme_es.store.one_version`, or a chunk gone since the search) is replaced by the next
        candidate: one more `_msearch`, only then (at most REFILLS times)."""
        attempt = 0
        while True:
            dedup = None
            if tool_context_id:
                chosen, dedup = self._dedupe_tool_context(ranked, tool_context_id, limit)
            else:
                chosen = ranked[:limit]
            chunks, shown = await store.shown(chosen, with_links=with_links)
            left_out = {c.id for c in chosen} - {c.id for c in chunks}
            beyond = len(ranked) - (dedup["skipped_seen"] if dedup else 0) > len(chosen)
            if not left_out or not beyond or attempt == REFILLS:
                return chunks, shown, dedup
            attempt += 1
            if tool_context_id:  # not returned after all: unseen again, as before this search
                seen = self._tool_context_store(tool_context_id).get(self.SEARCH_SEEN_KEY, {})
                for c in chosen:
                    seen.pop(c.id, None)
            ranked = [c for c in ranked if c.id not in left_out]

    def _date_filter(self, strict_date_filter: bool) -> dict:
        """The call's search filter with its top-level start/end dates merged in and normalised (as ReMe does)."""
        search_filter = dict(self.context.get("search_filter", {}) or {})
        for key in ("start_date", "end_date"):
            value = self.context.get(key)
            if value and key not in search_filter:
                search_filter[key] = value
        normalize_date_filters(search_filter, self.logger)
        if strict_date_filter:
            search_filter["strict_date_filter"] = True
        return search_filter

    def _answer(self, response, fused: list, counts: dict, hybrid: bool, link_expansion: dict, pre_dedup_count: int):
        """Fill the response as ReMe's SearchStep does: one block per hit with its links, results, counts."""
        lines: list[str] = []
        for c in fused:
            lines.append(
                f"========== {c.path}:{c.start_line}-{c.end_line} "
                f"[{self._format_scores(c.scores, hybrid)}] ==========\n{c.text}"
            )
            lines.extend(render_expansion_lines(link_expansion.get(c.path, {})))
        response.answer = "\n".join(lines)
        if not fused:
            response.metadata["empty_result"] = {
                "reason": "all_returned" if pre_dedup_count else "no_results",
                "message": ALL_RETURNED_MESSAGE if pre_dedup_count else NO_RESULTS_MESSAGE,
            }
        response.metadata["results"] = [c.model_dump(exclude_none=True, exclude={"embedding"}) for c in fused]
        response.metadata["link_expansion"] = link_expansion
        response.metadata["counts"] = {
            "vector": counts["vector"],
            "keyword": counts["keyword"],
            "returned": len(fused),
            "hybrid": hybrid,
            "fusion": counts["fusion"],
        }

    async def _take_search_budget(self, tool_context_id: str) -> bool:
        """ReMe's per-tool-context search budget; False (with the error answer set) when it is spent."""
        max_search_calls = self.context.get("max_search_calls")
        if max_search_calls is None:
            return True
        if not tool_context_id or self.app_context is None:
            raise ValueError("max_search_calls requires an application and tool_context_id")
        maximum = int(max_search_calls)
        if maximum < 1:
            raise ValueError("max_search_calls must be positive")
        budgets = self.app_context.metadata.setdefault("__search_call_budgets", {})
        budget = budgets.setdefault(tool_context_id, {"count": 0, "lock": asyncio.Lock()})
        async with budget["lock"]:
            if budget["count"] >= maximum:
                self.context.response.success = False
                self.context.response.answer = f"Error: search call limit of {maximum} reached"
                return False
            budget["count"] += 1
        return True


class _Prefetched:
    """The file store as ReMe's `expand_links` reads it, answered from what `EsFileStore.shown` fetched with the hits.

    `expand_links` asks `get_outlinks` and `get_inlinks` once per path and `get_nodes` for the neighbours it shows;
    the links and the hit files and indexed outlink targets came in the answer's second round trip, so only the
    front matter of inlink sources that are neither is fetched here (one more request, when there are such). The
    grouping, capping and neighbour metadata stay ReMe's own."""

    def __init__(self, store: EsFileStore, shown: Shown):
        self.store, self.shown = store, shown
        self.outlinks = {p: [to_file_link(x) for x in links] for p, links in shown.outlinks.items()}
        self.inlinks = {p: [to_file_link(x) for x in links] for p, links in shown.inlinks.items()}

    async def get_outlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list:
        if LinkScopeEnum(scope) != LinkScopeEnum.REAL or path not in self.outlinks:
            return await self.store.get_outlinks(path, scope)
        return self.outlinks[path]

    async def get_inlinks(self, path: str, scope: LinkScopeEnum = LinkScopeEnum.REAL) -> list:
        if LinkScopeEnum(scope) != LinkScopeEnum.REAL or path not in self.inlinks:
            return await self.store.get_inlinks(path, scope)
        return self.inlinks[path]

    async def get_nodes(self, paths: list[str] | None = None) -> list:
        if paths is None:
            return await self.store.get_nodes(None)
        files = self.shown.files
        missing = [p for p in paths if p not in files]
        fetched = {n.path: n for n in await self.store.get_nodes(missing)} if missing else {}
        return [to_file_node(files[p]) if p in files else fetched[p] for p in paths if p in files or p in fetched]


__all__ = ["EsSearchStep"]
