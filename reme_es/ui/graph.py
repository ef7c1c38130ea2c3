"""A file's link neighbourhood drawn server-side as a small SVG: the file in the middle, the files it links to and
the files linking to it on a circle around it, an arrow per link. Pure: no I/O, no script."""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT, RADIUS = 640, 360, 140


def _label(path: str, limit: int = 28) -> str:
    name = path.rsplit("/", 1)[-1]
    return name if len(name) <= limit else name[: limit - 1] + "…"


def neighbourhood_svg(path: str, outlinks: list[str], inlinks: list[str], href) -> str:
    """The SVG of `path` with its `outlinks` (arrows out) and `inlinks` (arrows in); `href(p)` is each node's link."""
    others = list(dict.fromkeys([*outlinks, *inlinks]))
    cx, cy = WIDTH / 2, HEIGHT / 2
    spots = {path: (cx, cy)}
    for i, other in enumerate(others):
        angle = 2 * math.pi * i / max(len(others), 1) - math.pi / 2
        spots[other] = (cx + RADIUS * 1.6 * math.cos(angle), cy + RADIUS * math.sin(angle))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        'role="img" aria-label="link neighbourhood" class="graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#667"/></marker></defs>',
    ]
    edges = [(path, t) for t in dict.fromkeys(outlinks)] + [(s, path) for s in dict.fromkeys(inlinks)]
    for source, target in edges:
        (x1, y1), (x2, y2) = spots[source], spots[target]
        dx, dy = x2 - x1, y2 - y1
        d = math.hypot(dx, dy) or 1.0
        pad = 14
        parts.append(
            f'<line x1="{x1 + dx / d * pad:.1f}" y1="{y1 + dy / d * pad:.1f}" x2="{x2 - dx / d * pad:.1f}" '
            f'y2="{y2 - dy / d * pad:.1f}" stroke="#889" stroke-width="1.5" marker-end="url(#arrow)"/>'
        )
    for node, (x, y) in spots.items():
        centre = node == path
        fill = "#2563eb" if centre else ("#16a34a" if node in outlinks else "#d97706")
        parts.append(
            f'<a href="{escape(href(node))}"><circle cx="{x:.1f}" cy="{y:.1f}" r="{10 if centre else 7}" '
            f'fill="{fill}"><title>{escape(node)}</title></circle>'
            f'<text x="{x:.1f}" y="{y + 22:.1f}" text-anchor="middle" font-size="11">{escape(_label(node))}</text></a>'
        )
    parts.append("</svg>")
    return "".join(parts)
