"""The reme-es test analysis plugin for Elasticsearch: compiled from our Java source into an install's plugins/.

Why it exists: the Elasticsearch integ-test zip (the only distribution on Maven Central) lacks the
analysis-common module, and Maven Central does not publish it. The `.security` system index, created on first
use of API keys, defines an analyzer `email` from four analysis-common components (tokenizer `uax_url_email`,
filters `pattern_capture`, `lowercase`, `unique`); without them `POST /_security/api_key` answers 400
"Unknown filter type [pattern_capture]". And reme-es' chunks template analyses text with the `stemmer` filter
(possessive and Porter) and the `english` and `cjk` analyzers: without them the index fell back to the `standard`
analyzer, and the keyword branch found less than on OpenSearch (LoCoMo's development half: 0.537 against 0.580 at
rank 10, docs/quality.md). The plugin (`es_test_analysis/`) registers those components on top of Lucene's
implementations, which the distribution's lib/ already holds, configured as analysis-common configures them.

The jar's name carries a hash of the source and descriptor, so an install built before a change (or before the
plugin existed) gets the current one on the next start.
"""

from __future__ import annotations

from pathlib import Path

from .java_plugin import JavaPlugin

PLUGIN = JavaPlugin(
    name="reme-es-test-analysis",
    folder="es_test_analysis",
    source="RemeTestAnalysisPlugin.java",
    release="21",
    why="the Elasticsearch test node (the integ-test distribution lacks analysis-common, which the .security index "
    "and reme-es' text analysis need)",
    jdk_hint="a full JDK 21+ (e.g. apt-get install openjdk-21-jdk-headless)",
)
NAME = PLUGIN.name


def ensure_analysis_plugin(home: Path, java_home: Path, version: str) -> Path:
    """Build the plugin into `<home>/plugins/reme-es-test-analysis/` unless the current build is there; its folder."""
    return PLUGIN.ensure(home, java_home, version)
