"""Draw one search's trace (its span tree on a time line) as SVG, from spans recorded by the SDK's in-memory exporter.

    python -m bench.perf.trace_picture --url http://127.0.0.1:9200 [--out docs/img/search-trace.svg]

Writes the notes of tests/integration/test_telemetry.py (four chunks of two files, 4-d vectors) into a fresh index
set, runs one hybrid search (`MemoryStore.search`, the library's and the CLI's) and one ReMe-shaped search (`ranked`
then `shown` inside one operation, as the ReMe search step does), and draws each span as a bar: its name, indented by
depth, its length in ms, and the events of the operation span (ranking stages, the k-NN width). The set is dropped
after. No dependency beyond the SDK (the `test` extra): the SVG is written by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import uuid
from pathlib import Path

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.models import Chunk, FileDoc
from reme_es.core.options import IndexOptions
from reme_es.core.telemetry import memory_operation
from reme_es.store.connect import open_store

ROW, LEFT, WIDTH = 22, 330, 520  # row height, name column, time line (px)
NOTES = {
    "daily/a.md": ["the agent indexes its memory", "snapshots keep a copy"],
    "daily/b.md": ["a search walks every shard", "memory of the team"],
}


def _sdk():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def rows(spans: list) -> list[tuple[int, object]]:
    """(depth, span), parents first, children by start time."""
    ids = {s.context.span_id for s in spans}
    children: dict = {}
    for s in sorted(spans, key=lambda s: s.start_time):
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    out: list[tuple[int, object]] = []

    def walk(parent, depth: int) -> None:
        for s in children.get(parent, []):
            out.append((depth, s))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out


def svg(title: str, spans: list) -> str:
    """The SVG of one trace."""
    ordered = rows(spans)
    t0 = min(s.start_time for s in spans)
    total = max(s.end_time for s in spans) - t0
    scale = WIDTH / max(1, total)
    lines, y = [], 40
    for depth, s in ordered:
        x, w = LEFT + (s.start_time - t0) * scale, max(2.0, (s.end_time - s.start_time) * scale)
        color = "#4c78a8" if depth == 0 else "#f58518" if "error.type" in (s.attributes or {}) else "#72b7b2"
        ms = (s.end_time - s.start_time) / 1e6
        lines.append(f'<text x="{8 + 14 * depth}" y="{y + 14}">{html.escape(s.name)}</text>')
        lines.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW - 8}" fill="{color}"/>')
        lines.append(f'<text x="{LEFT + WIDTH + 6}" y="{y + 14}" class="ms">{ms:.1f} ms</text>')
        y += ROW
        if depth == 0:
            for e in s.events:
                attrs = ", ".join(f"{k.removeprefix('reme_es.')}={v}" for k, v in (e.attributes or {}).items())
                lines.append(
                    f'<text x="22" y="{y + 13}" class="ev">event {html.escape(e.name)}: {html.escape(attrs)}</text>'
                )
                y += ROW - 4
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 80}" height="{y + 10}" '
        'font-family="monospace" font-size="12">'
        "<style>.ms{fill:#555}.ev{fill:#666;font-size:11px}</style>"
        f'<rect width="100%" height="100%" fill="white"/><text x="8" y="22" font-weight="bold">'
        f"{html.escape(title)}</text>"
    )
    return head + "".join(lines) + "</svg>\n"


async def main(url: str, out: Path) -> None:
    exporter = _sdk()
    prefix = f"trace-{uuid.uuid4().hex[:8]}"
    store = await open_store(ClientSettings([url]), prefix, options=IndexOptions(dims=4), workspace="agent-1")
    try:
        files = []
        for n, (path, texts) in enumerate(NOTES.items()):
            cs = [
                Chunk(id=f"{n}-{i}", path=path, text=t, embedding=[1.0, float(n), float(i), 0.5])
                for i, t in enumerate(texts)
            ]
            files.append((FileDoc(path=path, chunk_ids=[c.id for c in cs]), cs))
        await store.upsert(files)
        exporter.clear()
        with memory_operation("search_memory", store.store_id, "memory of the agent"):  # ReMe's search step's shape
            ranked = await store.ranked("memory of the agent", [1.0, 0.0, 1.0, 0.5], 10, limit=3)
            await store.shown(ranked.hits[:3], sorted({h.chunk.path for h in ranked.hits[:3]}))
        spans = list(exporter.get_finished_spans())
        engine = store.dialect.engine
    finally:
        await store.drop()
        await store.close()
    title = f"one search on {engine} (hybrid, ReMe's shape: ranked, then shown), store {prefix}/agent-1"
    out.write_text(svg(title, spans))
    print(f"wrote {out} ({len(spans)} spans)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", type=Path, default=Path("docs/img/search-trace.svg"))
    args = parser.parse_args()
    asyncio.run(main(args.url, args.out))
