"""Where the test servers come from, in order of preference:

1. an external cluster: `REME_ES_TEST_HOSTS` (comma list) with `REME_ES_TEST_FLAVOUR` naming what it runs;
2. a managed node `./run test` started for the whole run (`REME_ES_TEST_URLS`, `flavour=url` comma list), shared
   with the TypeScript tests that run after pytest: used as it is, and stopped by `./run`, not here;
3. testcontainers with the official image, when a Docker engine answers;
4. the managed local node (`reme_es.server`), fetched from Maven Central and started as an unprivileged user.

Each flavour is started once per test session and stopped at the end, failure or not.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from reme_es.server import node
from reme_es.server.flavours import get_flavour

IMAGES = {
    "opensearch-2.19": "opensearchproject/opensearch:2.19.1",
    "opensearch-3": "opensearchproject/opensearch:3.5.0",
    "elasticsearch-9": "docker.elastic.co/elasticsearch/elasticsearch:9.3.2",
}


def selected_flavours() -> list[str]:
    """Flavours this session tests: those `REME_ES_TEST_FLAVOURS` (comma list) names; otherwise opensearch-3 (the
    flavour users get by default) and elasticsearch-9, plus the secured opensearch-3.4-security with
    `REME_ES_TEST_OPENSEARCH3=1`. Secured flavours are run by the secured tests only, not by the `server` fixture.
    OpenSearch 2.19 runs the contract suite (`contract_flavours`)."""
    if names := os.environ.get("REME_ES_TEST_FLAVOURS"):
        return [f.strip() for f in names.split(",") if f.strip()]
    secured = ["opensearch-3.4-security"] if os.environ.get("REME_ES_TEST_OPENSEARCH3") else []
    return ["opensearch-3", "elasticsearch-9", *secured]


def contract_flavours() -> list[str]:
    """Flavours the contract suite's one-workspace variant runs on: opensearch-2.19 (every other flavour runs the
    shared-set variant, which is the same cases with a twin workspace); `REME_ES_TEST_FLAVOURS` picks instead."""
    if os.environ.get("REME_ES_TEST_FLAVOURS"):
        return selected_flavours()
    return ["opensearch-2.19"]


@dataclass(frozen=True)
class Server:
    """A running test server: its URL, flavour and where it came from."""

    url: str
    flavour: str
    engine: str
    source: str  # external | container | managed


def _docker_available() -> bool:
    if os.environ.get("REME_ES_TEST_NO_DOCKER"):
        return False
    try:
        import docker  # testcontainers' dependency

        docker.from_env(timeout=3).ping()
    except Exception:  # noqa: BLE001 - any failure means no usable engine
        return False
    return True


@contextmanager
def _container(flavour: str) -> Iterator[Server]:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    engine = get_flavour(flavour).engine
    container = DockerContainer(IMAGES[flavour]).with_exposed_ports(9200).with_env("discovery.type", "single-node")
    if engine == "opensearch":
        container = container.with_env("DISABLE_SECURITY_PLUGIN", "true").with_env(
            "OPENSEARCH_INITIAL_ADMIN_PASSWORD", "Reme-es-test-1"
        )
    else:
        container = container.with_env("xpack.security.enabled", "false")
    container = container.with_env(
        "OPENSEARCH_JAVA_OPTS" if engine == "opensearch" else "ES_JAVA_OPTS", "-Xms512m -Xmx512m"
    )
    with container:
        wait_for_logs(container, r"started|\"message\":\s*\"started", timeout=180)
        url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(9200)}"
        yield Server(url, flavour, engine, "container")


def node_name(flavour: str) -> str:
    """Name of the managed test node of a flavour, unique to this test run (`./run test` sets the prefix so its
    exit trap can find the nodes; a bare pytest run uses its pid), so two runs never stop each other's nodes."""
    return f"{os.environ.get('REME_ES_TEST_NODE_PREFIX', f'test-{os.getpid()}')}-{flavour}"


# Nodes tests start for themselves (a cluster's members and their restarts, a node started and stopped by one test)
# live for seconds to a minute: the JIT's first tier alone halves the CPU an OpenSearch 3 start costs on this machine
# (21 -> 11 CPU-s), CPU that on 2 cores is every other test's wall time. tests/conftest.py sets it for the session;
# the session's own nodes below serve every test and keep both tiers.
SHORT_LIVED_JAVA_OPTS = "-XX:TieredStopAtLevel=1"


@contextmanager
def _both_jit_tiers() -> Iterator[None]:
    """The session's short-lived-node JVM options left out for the block (a user's own REME_ES_JAVA_OPTS stays)."""
    opts = os.environ.get("REME_ES_JAVA_OPTS")
    if opts == SHORT_LIVED_JAVA_OPTS:
        del os.environ["REME_ES_JAVA_OPTS"]
    try:
        yield
    finally:
        if opts == SHORT_LIVED_JAVA_OPTS:
            os.environ["REME_ES_JAVA_OPTS"] = opts


def run_nodes() -> dict[str, str]:
    """The nodes `./run test` started for the whole run, by flavour (`REME_ES_TEST_URLS`)."""
    pairs = (p.split("=", 1) for p in os.environ.get("REME_ES_TEST_URLS", "").split(",") if "=" in p)
    return {flavour.strip(): url.strip() for flavour, url in pairs}


@contextmanager
def server_for(flavour: str) -> Iterator[Server]:
    """Provide a server of `flavour` for the duration of the block."""
    engine = get_flavour(flavour).engine
    external = os.environ.get("REME_ES_TEST_HOSTS")
    if external and os.environ.get("REME_ES_TEST_FLAVOUR", "opensearch-2.19") == flavour:
        yield Server(external.split(",")[0].strip(), flavour, engine, "external")
        return
    if url := run_nodes().get(flavour):
        yield Server(url, flavour, engine, "managed")
        return
    if _docker_available():
        with _container(flavour) as server:
            yield server
        return
    name = node_name(flavour)
    with socket.socket() as s:  # an OS-chosen port: the 92xx range may belong to a developer's own nodes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with _both_jit_tiers():
        info = node.start(flavour, name=name, http_port=port, heap=os.environ.get("REME_ES_TEST_HEAP", "512m"))
    try:
        yield Server(info.url, flavour, engine, "managed")
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)
