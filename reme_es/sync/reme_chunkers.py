"""ReMe's own file chunkers for `reme-es sync`, so a sync writes exactly what ReMe's index jobs write.

With `reme-ai` installed, each file is chunked by the chunker ReMe's `update_index_step` would pick for it
(`components.file_chunker` of ReMe's default.yaml: `markdown` for .md, `jsonl` for .jsonl, else `default`) and
converted as the plugin's file store converts it: same chunk ids, line ranges, texts, links and front matter as
`reme start` with `plugins: [reme-es]` on the same workspace. The built-in chunkers (`markdown.py`, `jsonl.py`)
serve only when reme-ai is absent (or `chunker: builtin` is set).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.models import Chunk, FileDoc

_INSTALL_HINT = "pip install 'reme-es[reme]'"


def reme_available() -> bool:
    """Whether ReMe's chunkers can be imported (reme-ai with its core extra)."""
    try:
        import reme.components.file_chunker  # noqa: F401
    except ImportError:
        return False
    return True


def _chunker_config() -> dict[str, dict[str, Any]]:
    """`components.file_chunker` of ReMe's default.yaml, in its order (the order ReMe picks chunkers in)."""
    from reme.config import resolve_app_config

    return dict((resolve_app_config(log_config=False).get("components") or {}).get("file_chunker") or {})


class ReMeChunkers:
    """The file chunkers of ReMe's default configuration, for one workspace root."""

    def __init__(self, root: Path):
        try:
            from reme.components.component_registry import R
            from reme.components.file_chunker import BaseFileChunker
            from reme.utils import get_logger
        except ImportError as exc:
            raise ConfigError(f"chunker: reme needs reme-ai: {_INSTALL_HINT} ({exc})") from None

        get_logger(level="WARNING", log_to_file=False)  # ReMe's first logger call sets it up; no logs/ folder
        self.root = Path(root).resolve()
        workspace = self.root
        self.chunkers: dict[str, BaseFileChunker] = {}
        for name, spec in _chunker_config().items():
            params = dict(spec or {})
            backend = params.pop("backend", name)
            cls = R.get("file_chunker", backend)
            if cls is None:
                raise ConfigError(f"ReMe's default config names file chunker {backend!r}, which ReMe does not register")
            # ReMe resolves a file's workspace path from its application config; here the workspace is the sync's.
            rooted = type(cls.__name__, (cls,), {"workspace_path": property(lambda _self: workspace)})
            self.chunkers[name] = rooted(name=name, backend=backend, **params)

    def chunker_for(self, path: str):
        """The chunker ReMe's `update_index_step` picks: the first whose extensions list the suffix, else `default`."""
        suffix = os.path.splitext(path)[1].lstrip(".").lower()
        for chunker in self.chunkers.values():
            if suffix and suffix in {ext.lower().lstrip(".") for ext in chunker.supported_extensions}:
                return chunker
        if "default" in self.chunkers:
            return self.chunkers["default"]
        raise ConfigError(f"no ReMe file chunker handles {path} and none is named default")

    async def _chunk(self, path: str, abs_path: Path) -> tuple[FileDoc, list[Chunk]]:
        from ..reme.convert import to_chunk, to_file_doc

        node, chunks = await self.chunker_for(path).chunk(abs_path)
        if node.path != path:
            raise ValueError(f"ReMe names this file {node.path!r}, not {path!r} (a path outside the workspace?)")
        return to_file_doc(node, chunks), [to_chunk(c, None) for c in chunks]

    async def _chunk_all(self, files: list[tuple[str, Path]]) -> list[tuple[FileDoc, list[Chunk]] | Exception]:
        out: list[tuple[FileDoc, list[Chunk]] | Exception] = []
        for path, abs_path in files:
            try:
                out.append(await self._chunk(path, abs_path))
            except Exception as exc:  # noqa: BLE001 - one file's failure is reported for that file
                out.append(exc)
        return out

    def chunk_files(self, files: list[tuple[str, Path]]) -> list[tuple[FileDoc, list[Chunk]] | Exception]:
        """Chunk (workspace path, absolute path) pairs in a worker thread: a file doc and chunks, or the error."""
        return asyncio.run(self._chunk_all(files))


__all__ = ["ReMeChunkers", "reme_available"]
