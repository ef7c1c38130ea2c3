"""Memorie-shaped documents written with raw HTTP, in the TypeScript package's own index templates
(memorie/templates) and document shapes (memorie/src/dialect.ts `memoryDoc`, `relationDoc`): for the UI's browser test
and its screenshots, without building the package."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.integration.cli_support import EXAMPLE


def http(method: str, url: str, body: str | None = None) -> None:
    data = body.encode() if body is not None else None
    headers = {"Content-Type": "application/x-ndjson" if url.endswith("_bulk?refresh=true") else "application/json"}
    urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=30).read()


MEMORIE_TEMPLATES: Path = EXAMPLE.parents[1] / "memorie" / "templates"
TEXTS = ["Ana drinks green tea every morning", "The deploy runs on Fridays", "Coffee after noon keeps her awake"]


def memorie_index(node_url: str, prefix: str, kind: str) -> str:
    """`<prefix>-memorie-<kind>` created with the TypeScript package's own template (its strict mapping), the text
    analyser set to the standard one."""
    template = json.loads((MEMORIE_TEMPLATES / f"{kind}.json").read_text())
    settings = template["settings"]
    if "analysis" in settings:
        settings["analysis"]["analyzer"]["memorie_text"] = {"type": "standard"}
    index = f"{node_url}/{prefix}-memorie-{kind}"
    http("PUT", index, json.dumps({"settings": settings, "mappings": template["mappings"]}))
    return index


def memory(tenant: str, n: int, text: str) -> dict:
    """A memory document as memorie/src/dialect.ts `memoryDoc` writes it."""
    when = f"2026-01-{n + 1:02d}T09:00:00.000Z"
    return {"id": f"m-{tenant}-{n}", "tenant_id": tenant, "namespace": "work", "subject_id": f"user-{tenant}",
            "type": "fact", "state": "active", "importance": 0.5 + n / 10, "confidence": 1.0, "created_at": when,
            "updated_at": when, "last_accessed_at": None, "expires_at": None, "content": text, "meta_keys": [],
            "meta_kv": [], "record": {"id": f"m-{tenant}-{n}"}}  # fmt: skip


def relation(tenant: str, source: int, target: int, kind: str = "related_to", rid: str = "") -> dict:
    """A relation document as memorie/src/dialect.ts `relationDoc` writes it (both ends in `tenant`)."""
    end = {"tenant_id": tenant, "namespace": "work", "subject_id": f"user-{tenant}"}
    return {"id": rid or f"r-{tenant}", "from_id": f"m-{tenant}-{source}", "to_id": f"m-{tenant}-{target}",
            "type": kind, "weight": 0.8, "created_at": "2026-01-05T00:00:00.000Z", "metadata": None,
            **{f"from_{k}": v for k, v in end.items()}, **{f"to_{k}": v for k, v in end.items()}}  # fmt: skip


def bulk(index: str, docs: list[dict]) -> None:
    lines = "".join(json.dumps({"index": {"_id": d["id"]}}) + "\n" + json.dumps(d) + "\n" for d in docs)
    http("POST", f"{index}/_bulk?refresh=true", lines)
