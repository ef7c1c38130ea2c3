"""The reme-es k-NN guard for the managed OpenSearch node: compiled from our Java source into an install's plugins/.

Why it exists: the k-NN plugin zip on Maven Central carries no native libraries (faiss, nmslib). A knn_vector field
on either engine (or on the default engine, which is one of them) kills the JVM with `UnsatisfiedLinkError` when its
first segment is written, and every restart dies again replaying the translog, so every index on the node becomes
unreachable. Other tools on the same machine create such indices by default (LangChain's and mem0's OpenSearch
stores use nmslib). The plugin (`os_knn_guard/`) refuses those mappings with a 400 naming the lucene engine, and
fails the shards of such an index that already exists instead of letting them crash the node (the index is red, the
node starts, `node.start` names the index).

One source serves OpenSearch 2.x (Java 11 bytecode) and 3.x (Java 21; the node `Client` moved to
`org.opensearch.transport.client` in 3.0, the only API change the guard meets). The jar's name carries a hash of the
source and descriptor, so an install built before a change gets the current one on the next start.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .java_plugin import JavaPlugin

PLUGIN = JavaPlugin(
    name="reme-es-knn-guard",
    folder="os_knn_guard",
    source="RemeKnnGuardPlugin.java",
    release="11",
    why=(
        "the managed OpenSearch node (it keeps faiss/nmslib k-NN indices, which this node cannot run, from crashing it)"
    ),
    jdk_hint="a full JDK (e.g. apt-get install openjdk-17-jdk-headless)",
)
PLUGIN_3 = replace(
    PLUGIN,
    release="21",
    jdk_hint="a full JDK 21+ (e.g. apt-get install openjdk-21-jdk-headless)",
    edits=(("import org.opensearch.client.Client;", "import org.opensearch.transport.client.Client;"),),
)
NAME = PLUGIN.name


def plugin_for(version: str):
    """The guard's build for an OpenSearch version: 2.x or 3.x."""
    return PLUGIN_3 if int(version.split(".")[0]) >= 3 else PLUGIN


def ensure_knn_guard(home: Path, java_home: Path, version: str) -> Path:
    """Build the guard into `<home>/plugins/reme-es-knn-guard/` unless the current build is there; its folder."""
    return plugin_for(version).ensure(home, java_home, version)
