"""Which chunks get a `speaker` (issue 50 item 6): by each chunk's opening alone (before) and where its file is a
dialog (`reme_es.store.sources.dialog_speakers`, now), on the generated sets, LoCoMo's development half and
`examples/workspace` (chunked as `reme-es sync` chunks Markdown).

    python -m bench.quality.speakers [--data /work/shared/data/locomo-dev] [--workspace examples/workspace]

Per set: chunks, chunks with a speaker before and now, and the names given before that are not given now (the
openings that were taken for a speaker in files that are not dialogs), most frequent first.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from bench.common import table
from reme_es.core.models import Chunk
from reme_es.store.sources import chunk_speaker, dialog_speakers


def _chunks(files: dict[str, list[tuple[str, int, str]]]) -> list[Chunk]:
    return [
        Chunk(id=cid, path=p, start_line=line, end_line=line, text=t) for p, cs in files.items() for cid, line, t in cs
    ]


def workspace_chunks(root: Path) -> list[Chunk]:
    """The workspace's Markdown files, chunked as the sync chunks them."""
    from reme_es.sync.markdown import chunk_markdown

    out: list[Chunk] = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        out += chunk_markdown(rel, path.read_text(), lambda *_: None, 1600).chunks
    return out


def sets(args) -> dict[str, list[Chunk]]:
    from bench.data import memory2, memory3
    from bench.quality import heldout, locomo
    from bench.quality import memory_quality as mq

    out = {"memory (generated)": _chunks(mq.memory_set().files)}
    for name, module in (("memory2", memory2), ("memory3", memory3)):
        out[f"{name} (generated)"] = _chunks(heldout.generated_set(name, module).files)
    out["LoCoMo development half"] = _chunks(
        {
            p: cs
            for c in locomo.CONVERSATIONS
            for p, cs in locomo.conversation(Path(args.data) / f"{c}.json").files.items()
        }
    )
    out["examples/workspace"] = workspace_chunks(Path(args.workspace))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/work/shared/data/locomo-dev")
    p.add_argument("--workspace", default="examples/workspace")
    args = p.parse_args()
    rows = []
    for name, chunks in sets(args).items():
        before = {c.id: s for c in chunks if (s := chunk_speaker(c.text))}
        now = dialog_speakers(chunks)
        dropped = Counter(s for cid, s in before.items() if cid not in now)
        top = ", ".join(f"{s} {n}" for s, n in dropped.most_common(6))
        rows.append([name, len(chunks), len(before), len(now), top])
    print(table(["set", "chunks", "speaker before", "speaker now", "openings no longer a speaker"], rows))


if __name__ == "__main__":
    main()
