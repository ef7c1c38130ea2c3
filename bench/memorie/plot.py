"""Plot bench/memorie/backends.mjs's JSON: p50 per operation against memories, per backend and embedding set.

python -m bench.memorie.plot bench/results/memorie_backends.json [more.json ...] docs/img/memorie_backends.png
"""

from __future__ import annotations

import json
import sys

PANELS = [
    ("add", "add (index + upsert) p50 ms", lambda r: r["add"]["p50"]),
    ("addSearch", "add, then search at once p50 ms", lambda r: r["addSearch"]["p50"]),
    ("keyword", "keyword, scoped, limit 10 p50 ms", lambda r: r["keyword"]["p50"]),
    ("vector", "vector topK 50 p50 ms", lambda r: r["vector"]["p50"]),
    ("recall", "vector recall@10", lambda r: r["recall"]),
    ("load", "bulk load memories/s", lambda r: r["loadN"] / r["loadS"] if r["loadS"] else 0),
]


def main(sources: list[str], png: str) -> None:
    """Draw one panel per operation, one line per backend and embedding set (rows of every source file)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: list[dict] = []
    nodes: list[str] = []
    for src in sources:
        with open(src, encoding="utf-8") as f:
            data = json.load(f)
        node = f"{data.get('distribution', '')} {data['version']}"
        nodes.append(node)
        for r in data["rows"]:
            same = r["backend"].startswith("reme-es") or len(sources) == 1
            rows.append(r if same else {**r, "backend": f"{r['backend']} (run with {node})"})
    series: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        series.setdefault((r["backend"], r["set"]), []).append(r)
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (_, title, value) in zip(axes.flat, PANELS):
        for (backend, emb), points in sorted(series.items()):
            points.sort(key=lambda r: r["size"])
            style = "-" if backend.startswith("reme-es") else "--"
            marker = "o" if emb == "hash256" else "s"
            ax.plot(
                [p["size"] for p in points], [value(p) for p in points], style, marker=marker, label=f"{backend}, {emb}"
            )
        ax.set_xscale("log")
        if title != "vector recall@10":
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("memories")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        f"Memorie's stores: reme-es ({', '.join(nodes)}) vs FTS5 + brute-force cosine "
        "(medians; baselines from the same run as each node's rows; a 2-core machine)"
    )
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
