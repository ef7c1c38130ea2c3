"""What each managed-node flavour is made of: a distribution, modules built from jars, plugin zips.

All artifacts come from Maven Central. The OpenSearch 2.x integ-test zip holds only the transport
module, so `analysis-common` (language analyzers, cjk) and `lang-painless` (which k-NN extends) are
assembled as module folders from their jars; the 3.x integ-test zip already carries every module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError


@dataclass(frozen=True)
class Artifact:
    """A Maven coordinate `group:artifact:version` with its packaging."""

    group: str
    name: str
    version: str
    packaging: str = "jar"

    @property
    def filename(self) -> str:
        """File name as Maven stores it."""
        return f"{self.name}-{self.version}.{self.packaging}"

    @property
    def path(self) -> str:
        """Path below a Maven repository root."""
        return f"{self.group.replace('.', '/')}/{self.name}/{self.version}/{self.filename}"

    def __str__(self) -> str:
        return f"{self.group}:{self.name}:{self.version}:{self.packaging}"


@dataclass(frozen=True)
class Module:
    """A module folder assembled from jars plus a descriptor (what a full distribution ships)."""

    name: str
    classname: str
    description: str
    jars: tuple[Artifact, ...]
    extended_plugins: str = ""
    policy: str = ""


@dataclass(frozen=True)
class Flavour:
    """One runnable node shape: engine, version, Java requirement and parts."""

    name: str
    engine: str  # "opensearch" | "elasticsearch"
    version: str
    java_min: int
    distribution: Artifact
    modules: tuple[Module, ...] = ()
    plugins: tuple[Artifact, ...] = field(default_factory=tuple)

    @property
    def home_name(self) -> str:
        """Folder the distribution zip unpacks to."""
        return f"{self.engine}-{self.version}"


_PAINLESS_POLICY = """grant {
  permission java.lang.RuntimePermission "createClassLoader";
  permission java.lang.RuntimePermission "getClassLoader";
};
"""


def _opensearch_2_modules(version: str, asm: str, antlr: str) -> tuple[Module, ...]:
    plugin = "org.opensearch.plugin"
    painless = Module(
        name="lang-painless",
        classname="org.opensearch.painless.PainlessPlugin",
        description="An easy, safe and fast scripting language for OpenSearch",
        jars=(
            Artifact(plugin, "lang-painless", version),
            Artifact(plugin, "opensearch-scripting-painless-spi", version),
            Artifact("org.antlr", "antlr4-runtime", antlr),
            *(Artifact("org.ow2.asm", a, asm) for a in ("asm", "asm-util", "asm-tree", "asm-commons", "asm-analysis")),
        ),
        policy=_PAINLESS_POLICY,
    )
    analysis = Module(
        name="analysis-common",
        classname="org.opensearch.analysis.common.CommonAnalysisPlugin",
        description="Adds built-in analyzers to OpenSearch.",
        jars=(Artifact(plugin, "analysis-common", version),),
        extended_plugins="lang-painless",
    )
    return painless, analysis


FLAVOURS: dict[str, Flavour] = {
    "opensearch-2.19": Flavour(
        name="opensearch-2.19",
        engine="opensearch",
        version="2.19.1",
        java_min=11,
        distribution=Artifact("org.opensearch.distribution.integ-test-zip", "opensearch", "2.19.1", "zip"),
        modules=_opensearch_2_modules("2.19.1", asm="9.7", antlr="4.13.1"),
        plugins=(
            Artifact("org.opensearch.plugin", "opensearch-knn", "2.19.1.0", "zip"),
            Artifact("org.opensearch.plugin", "neural-search", "2.19.1.0", "zip"),
        ),
    ),
    # The 3.5.0 integ-test zip already ships every module; neural-search 3.5.0.0 is not on Maven
    # Central, so this flavour has k-NN but no hybrid query (reme-es fuses client-side there).
    "opensearch-3": Flavour(
        name="opensearch-3",
        engine="opensearch",
        version="3.5.0",
        java_min=21,
        distribution=Artifact("org.opensearch.distribution.integ-test-zip", "opensearch", "3.5.0", "zip"),
        plugins=(Artifact("org.opensearch.plugin", "opensearch-knn", "3.5.0.0", "zip"),),
    ),
    # 9.3.0 is not on Maven Central (404); 9.3.2 is.
    "elasticsearch-9": Flavour(
        name="elasticsearch-9",
        engine="elasticsearch",
        version="9.3.2",
        java_min=21,
        distribution=Artifact("org.elasticsearch.distribution.integ-test-zip", "elasticsearch", "9.3.2", "zip"),
    ),
}

DEFAULT_FLAVOUR = "opensearch-2.19"


def get_flavour(name: str) -> Flavour:
    """Look up a flavour by name, with the list of valid names in the error."""
    try:
        return FLAVOURS[name]
    except KeyError:
        raise ConfigError(f"unknown server flavour {name!r}; choose one of {', '.join(FLAVOURS)}") from None
