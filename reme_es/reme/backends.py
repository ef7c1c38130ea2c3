"""The ReMe file store class of each registered engine (`reme.plugins` registers one backend per dialect)."""

from __future__ import annotations

from ..server.flavours import default_flavour
from .file_store import EsFileStore


class OpenSearchFileStore(EsFileStore):
    """The file store on OpenSearch 2.x/3.x (k-NN plugin for vectors, neural-search for one-request hybrid)."""

    engine = "opensearch"
    flavour = default_flavour("opensearch")


class ElasticsearchFileStore(EsFileStore):
    """The file store on Elasticsearch 9.x (hybrid fused client-side with ReMe's RRF)."""

    engine = "elasticsearch"
    flavour = default_flavour("elasticsearch")


def file_store_class(engine: str) -> type[EsFileStore]:
    """The ReMe file store of a registered engine: the two named above, or one made for another dialect."""
    named = {"opensearch": OpenSearchFileStore, "elasticsearch": ElasticsearchFileStore}
    if engine in named:
        return named[engine]
    doc = f"The file store on the registered `{engine}` dialect (hosts required)."
    return type(f"{engine.title()}FileStore", (EsFileStore,), {"engine": engine, "__doc__": doc})


__all__ = ["ElasticsearchFileStore", "OpenSearchFileStore", "file_store_class"]
