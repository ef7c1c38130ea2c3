"""What each managed-node flavour is made of: a distribution, modules built from jars, plugin zips.

All artifacts come from Maven Central. The OpenSearch 2.x integ-test zip holds only the transport
module, so `analysis-common` (language analyzers, cjk) and `lang-painless` (which k-NN extends) are
assembled as module folders from their jars; the 3.5.0 integ-test zip already carries every module (the
3.4.0 one only transport-netty4 and transport-grpc).

A secured flavour adds the opensearch-security plugin (`security_plugin`). Its node starts only with TLS
material, users and the plugin's config files in its config folder (`node.start(config_files=...)`; see
tests/reliability/test_secured_opensearch.py), so `reme-es server start` does not offer it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.errors import ConfigError


@dataclass(frozen=True)
class Artifact:
    """A Maven coordinate `group:artifact:version` with its packaging."""

    group: str
    name: str
    version: str
    packaging: str = "jar"
    sha256: str = ""  # pinned: several of these files have no checksum published next to them

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


SHA256 = {
    "analysis-common-2.19.1.jar": "13fdc1071af42946b13153a62491a5e9b0ad214d44f7c8153d3afef60f558821",
    "antlr4-runtime-4.13.1.jar": "54665d2838cc66458343468efc539e454fc95b46a8a04b13c6ac43fc9be63505",
    "asm-9.7.jar": "adf46d5e34940bdf148ecdd26a9ee8eea94496a72034ff7141066b3eea5c4e9d",
    "asm-analysis-9.7.jar": "7bc6bcbc21379948a0c8c467fb0f864206e5b818f6bc0b546872f5c9f941556f",
    "asm-commons-9.7.jar": "389bc247958e049fc9a0408d398c92c6d370c18035120395d4cba1d9d9304b7a",
    "asm-tree-9.7.jar": "62f4b3bc436045c1acb5c3ba2d8ec556ec3369093d7f5d06c747eb04b56d52b1",
    "asm-util-9.7.jar": "37a6414d36641973f1af104937c95d6d921b2ddb4d612c66c5a9f2b13fc14211",
    "commons-collections4-4.5.0.jar": "00f93263c267be201b8ae521b44a7137271b16688435340bf629db1bac0a5845",
    "elasticsearch-9.3.2.zip": "99b5b540c8d3a5c53cbe1e4f35c46acefff59131760ddc330a7616cd319086f1",
    "lang-painless-2.19.1.jar": "3cf5e02efa40ff5b88e74e1ab66a0bc462de3509fab4a6a4ffe90b8d13777a9a",
    "neural-search-2.19.1.0.zip": "b17ca1d774692902c58cbae102bf463970740c31d81446866e8eabd336e285aa",
    "opensearch-2.19.1.zip": "af7152d8b7f6f1cee09d47276b32b70479fe6dd8cdbb61213f84eb7f8098b261",
    "opensearch-3.4.0.zip": "6540e95fe8bfaedc3eb1c58e829912ea2203af2ac1f88f76411c20a2fc5254a6",
    "opensearch-3.5.0.zip": "b676ad392c95a94d8d2bd8785b8b922c7811536daf6a9ec0c7277a34bd8a17a9",
    "opensearch-knn-2.19.1.0.zip": "eab8c9818865bc035212eab5068cdacae164baa09d4c152f49b736d6f6b0e85c",
    "opensearch-knn-3.5.0.0.zip": "99fdf3ac9ef95974e276298b83a58532bf21ba13bd5fd96a4b59465b7e613309",
    "opensearch-scripting-painless-spi-2.19.1.jar": "c2598797a5f6f897ce7e8d05f593ff96de3fbc56c52f299d63cddcae41556dda",
    "opensearch-security-2.19.1.0.zip": "94a04f12ac6033902209fac1e4e512618d45beee604bbf0e42c3ed79c55220cf",
    "opensearch-security-3.4.0.0.zip": "fc164c084979f7f793d295b6bca56bf8bee76dafb762adef9f14fa872e0a7596",
}


def _pinned(group: str, name: str, version: str, packaging: str = "jar") -> Artifact:
    """An artifact with its pinned sha256 (files without a pin are verified by the published .sha1 only)."""
    return Artifact(group, name, version, packaging, SHA256.get(f"{name}-{version}.{packaging}", ""))


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
class AbsentModule:
    """A module a plugin extends that the distribution lacks and Maven Central does not publish. The install marks it
    optional in the plugin's descriptor (`;optional=true`, as upstream does for workload-management), so the plugin
    loads without what it adds there, and puts the jars the module would have shared with it into its folder."""

    name: str
    shared_jars: tuple[Artifact, ...] = ()


@dataclass(frozen=True)
class Flavour:
    """One runnable node shape: engine, version, Java requirement and parts."""

    name: str
    engine: str  # "opensearch" | "elasticsearch"
    version: str
    java_min: int
    distribution: Artifact
    modules: tuple[Module, ...] = ()
    plugins: tuple[Artifact, ...] = ()
    java_max: int | None = None
    security_plugin: Artifact | None = None
    absent_modules: tuple[AbsentModule, ...] = ()
    # reme-es' k-NN guard plugin (server/knn_guard.py): refuses faiss/nmslib fields, which crash a node whose k-NN
    # plugin has no native libraries (every Maven Central k-NN zip); built against the install's own jars
    knn_guard: bool = False

    @property
    def home_name(self) -> str:
        """Folder the distribution zip unpacks to."""
        return f"{self.engine}-{self.version}"

    @property
    def plugin_zips(self) -> tuple[Artifact, ...]:
        """Every plugin zip the install unpacks, the security plugin included."""
        return (*self.plugins, self.security_plugin) if self.security_plugin else self.plugins

    @property
    def artifacts(self) -> tuple[Artifact, ...]:
        """Every file the install fetches."""
        return (
            self.distribution,
            *self.plugin_zips,
            *(j for m in self.modules for j in m.jars),
            *(j for m in self.absent_modules for j in m.shared_jars),
        )

    def has_plugin(self, name: str) -> bool:
        """Whether a plugin zip of this artifact name is installed (e.g. `opensearch-knn`)."""
        return any(p.name == name for p in self.plugin_zips)


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
            _pinned(plugin, "lang-painless", version),
            _pinned(plugin, "opensearch-scripting-painless-spi", version),
            _pinned("org.antlr", "antlr4-runtime", antlr),
            *(_pinned("org.ow2.asm", a, asm) for a in ("asm", "asm-util", "asm-tree", "asm-commons", "asm-analysis")),
        ),
        policy=_PAINLESS_POLICY,
    )
    analysis = Module(
        name="analysis-common",
        classname="org.opensearch.analysis.common.CommonAnalysisPlugin",
        description="Adds built-in analyzers to OpenSearch.",
        jars=(_pinned(plugin, "analysis-common", version),),
        extended_plugins="lang-painless",
    )
    return painless, analysis


_OPENSEARCH_2_19 = Flavour(
    name="opensearch-2.19",
    engine="opensearch",
    version="2.19.1",
    java_min=11,
    java_max=23,
    distribution=_pinned("org.opensearch.distribution.integ-test-zip", "opensearch", "2.19.1", "zip"),
    modules=_opensearch_2_modules("2.19.1", asm="9.7", antlr="4.13.1"),
    plugins=(
        _pinned("org.opensearch.plugin", "opensearch-knn", "2.19.1.0", "zip"),
        _pinned("org.opensearch.plugin", "neural-search", "2.19.1.0", "zip"),
    ),
    knn_guard=True,
)

FLAVOURS: dict[str, Flavour] = {
    "opensearch-2.19": _OPENSEARCH_2_19,
    # The 3.5.0 integ-test zip already ships every module; neural-search 3.5.0.0 is not on Maven
    # Central, so this flavour has k-NN but no hybrid query (reme-es fuses client-side there).
    "opensearch-3": Flavour(
        name="opensearch-3",
        engine="opensearch",
        version="3.5.0",
        java_min=21,
        distribution=_pinned("org.opensearch.distribution.integ-test-zip", "opensearch", "3.5.0", "zip"),
        plugins=(_pinned("org.opensearch.plugin", "opensearch-knn", "3.5.0.0", "zip"),),
        knn_guard=True,
    ),
    # 9.3.0 is not on Maven Central (404); 9.3.2 is. The launcher adds reme-es' own analysis plugin to the install
    # (es_plugin: the components the `.security` index needs, which the integ-test zip lacks).
    "elasticsearch-9": Flavour(
        name="elasticsearch-9",
        engine="elasticsearch",
        version="9.3.2",
        java_min=21,
        distribution=_pinned("org.elasticsearch.distribution.integ-test-zip", "elasticsearch", "9.3.2", "zip"),
    ),
    # Secured flavours (see the module docstring). No checksum is published next to the 2.19.1.0 security zip.
    "opensearch-2.19-security": replace(
        _OPENSEARCH_2_19,
        name="opensearch-2.19-security",
        security_plugin=_pinned("org.opensearch.plugin", "opensearch-security", "2.19.1.0", "zip"),
    ),
    # Secured OpenSearch 3 is 3.4.0, not the 3.5.0 of `opensearch-3`: opensearch-security 3.5.0.0 is not on Maven
    # Central (its versions there: 2.11.1.0, 2.19.3.0, 2.19.4.0, 3.4.0.0). The sha256 of the 3.4.0 zips and of
    # commons-collections4 were checked against the .sha1 Maven Central publishes. Security 3.4.0.0 extends the
    # `rule-framework` module, which the 3.4.0 integ-test zip lacks (3.5.0's has it) and Maven Central does not
    # publish: security then loads without its principal attributes for workload-management rules (unused by
    # reme-es), and gets commons-collections4 4.5.0 (OpenSearch 3.4.0's version; its privilege evaluation uses it,
    # the zip leaves it to rule-framework) in its own folder. No k-NN: the k-NN 3.4.0.0 zip has no checksum
    # published and extends lang-painless, which this zip also lacks; the secured tests run without vectors here.
    "opensearch-3.4-security": Flavour(
        name="opensearch-3.4-security",
        engine="opensearch",
        version="3.4.0",
        java_min=21,
        distribution=_pinned("org.opensearch.distribution.integ-test-zip", "opensearch", "3.4.0", "zip"),
        security_plugin=_pinned("org.opensearch.plugin", "opensearch-security", "3.4.0.0", "zip"),
        absent_modules=(
            AbsentModule("rule-framework", (_pinned("org.apache.commons", "commons-collections4", "4.5.0"),)),
        ),
    ),
}

# The managed default (docs/decisions.md): OpenSearch 3 runs on Java 21+, where Lucene vectorises k-NN; hybrid is
# fused on the client there (no neural-search 3.5 on Maven Central). A node made earlier keeps its flavour
# (`node.flavour_of`).
DEFAULT_FLAVOUR = "opensearch-3"
DEFAULT_HEAP = "512m"  # a managed node's JVM heap (-Xms and -Xmx), unless one is given


def get_flavour(name: str) -> Flavour:
    """Look up a flavour by name, with the list of valid names in the error."""
    try:
        return FLAVOURS[name]
    except KeyError:
        raise ConfigError(f"unknown server flavour {name!r}; choose one of {', '.join(FLAVOURS)}") from None


# The flavours a user starts by name (`reme-es server start --flavour`, the config's `flavour`); the secured ones
# are for the tests. An engine whose file store must run its own flavour on the managed node names it below; the
# others run the node's own flavour or DEFAULT_FLAVOUR (`node.flavour_of`).
LOCAL_FLAVOURS = ("opensearch-2.19", "opensearch-3", "elasticsearch-9")
ENGINE_FLAVOURS = {"elasticsearch": "elasticsearch-9"}


def default_flavour(engine: str) -> str | None:
    """The managed-node flavour an engine's file store starts (None: the node's own, else DEFAULT_FLAVOUR)."""
    return ENGINE_FLAVOURS.get(engine)
