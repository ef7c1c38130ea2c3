"""Pure parts of the managed-node launcher: flavours, JVM options, Java discovery, port checks, the install lock."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from reme_es.core.errors import ConfigError, ServerError
from reme_es.server import node
from reme_es.server.flavours import FLAVOURS, get_flavour
from reme_es.server.process import _alive


def test_flavours_pair_plugin_versions_with_the_server():
    for flavour in FLAVOURS.values():
        for plugin in flavour.plugin_zips:
            assert plugin.version.startswith(flavour.version + "."), (flavour.name, plugin)
    assert {m.name for m in get_flavour("opensearch-2.19").modules} == {"lang-painless", "analysis-common"}
    with pytest.raises(ConfigError, match="opensearch-2.19"):
        get_flavour("solr")


def test_secured_flavours_are_their_server_plus_the_security_plugin():
    secured = {name: f for name, f in FLAVOURS.items() if f.security_plugin is not None}
    assert {name: str(f.security_plugin) for name, f in secured.items()} == {
        "opensearch-2.19-security": "org.opensearch.plugin:opensearch-security:2.19.1.0:zip",
        "opensearch-3.4-security": "org.opensearch.plugin:opensearch-security:3.4.0.0:zip",
    }
    base = get_flavour("opensearch-2.19")
    assert secured["opensearch-2.19-security"].artifacts == (
        base.distribution, *base.plugins, secured["opensearch-2.19-security"].security_plugin,
        *(j for m in base.modules for j in m.jars),
    )  # fmt: skip
    assert (base.java_min, base.java_max) == (11, 23)
    os3 = secured["opensearch-3.4-security"]
    assert (os3.version, os3.java_min, os3.java_max, os3.modules, os3.plugins) == ("3.4.0", 21, None, (), ())
    assert [(m.name, [str(j) for j in m.shared_jars]) for m in os3.absent_modules] == [
        ("rule-framework", ["org.apache.commons:commons-collections4:4.5.0:jar"])
    ]


def test_absent_extended_plugins_become_optional_in_the_descriptor():
    descriptor = (
        "name=opensearch-security\nextended.plugins=workload-management;optional=true,rule-framework\njava.version=21\n"
    )
    out = node.optional_extended(node.optional_extended(descriptor, "rule-framework"), "workload-management")
    assert out == (
        "name=opensearch-security\n"
        "extended.plugins=workload-management;optional=true,rule-framework;optional=true\n"
        "java.version=21\n"
    )
    assert node.optional_extended("extended.plugins=lang-painless\n", "rule-framework") == (
        "extended.plugins=lang-painless\n"
    )
    assert node.optional_extended("extended.plugins=\n", "rule-framework") == "extended.plugins=\n"


def test_jvm_paths_point_into_the_node_folder(tmp_path):
    options = (
        "-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n"
        "9-:-Xlog:gc*:file=logs/gc.log:utctime\n21-:-javaagent:agent/opensearch-agent.jar\n-Xlog:gc*:file=gc.log:x\n"
    )
    out = node._absolute_jvm_paths(options, tmp_path, Path("/opt/os"))
    assert f"-XX:HeapDumpPath={tmp_path}/data" in out
    assert f"-XX:ErrorFile={tmp_path}/logs/hs_err_pid%p.log" in out
    assert f"file={tmp_path}/logs/gc.log:utctime" in out and f"file={tmp_path}/logs/gc.log:x" in out
    assert "-javaagent:/opt/os/agent/opensearch-agent.jar" in out


def test_reme_es_java_opts_follow_the_heap_in_the_start_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("REME_ES_JAVA_OPTS", raising=False)
    os_env = node._node_env(get_flavour("opensearch-3"), tmp_path, Path("/jdk"), "1g")
    assert os_env["OPENSEARCH_JAVA_OPTS"] == "-Xms1g -Xmx1g" and os_env["OPENSEARCH_JAVA_HOME"] == "/jdk"
    monkeypatch.setenv("REME_ES_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -Dx=y")
    es_env = node._node_env(get_flavour("elasticsearch-9"), tmp_path, Path("/jdk"), "512m")
    assert es_env["ES_JAVA_OPTS"] == "-Xms512m -Xmx512m -XX:TieredStopAtLevel=1 -Dx=y"


def _fake_jdk(root: Path, name: str, version: str) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return home


def test_find_java_picks_the_lowest_fitting_jdk(tmp_path, monkeypatch):
    _fake_jdk(tmp_path, "jdk17", "17.0.15")
    jdk25 = _fake_jdk(tmp_path, "jdk25", "25.0.1")
    monkeypatch.setenv("REME_ES_JAVA_HOME", str(jdk25))
    assert node.find_java(21) == (jdk25.resolve(), 25)
    with pytest.raises(ServerError, match="Java 11..23"):
        node.find_java(11, 23)
    monkeypatch.setenv("REME_ES_JAVA_HOME", str(tmp_path / "jdk17"))
    with pytest.raises(ServerError, match="Java 21"):
        node.find_java(21)


def test_taken_port_is_refused_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        monkeypatch.setattr(node, "install", lambda flavour: tmp_path / "never")
        monkeypatch.setattr(node, "find_java", lambda *a: (tmp_path, 17))
        with pytest.raises(ServerError, match=f"port {port}"):
            node.start("opensearch-2.19", name="porttest", http_port=port)
    assert not (tmp_path / "nodes" / "porttest").exists()


def test_status_of_a_node_never_started(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    assert node.status("nobody") == {"name": "nobody", "running": False, "reason": "never started"}


def test_every_flavour_artifact_has_a_pinned_sha256():
    for flavour in FLAVOURS.values():
        parts = flavour.artifacts
        assert all(len(a.sha256) == 64 for a in parts), [str(a) for a in parts if not a.sha256]


def test_a_file_that_does_not_match_its_pin_is_refused_and_removed(tmp_path):
    from reme_es.server.fetch import _verify_pinned
    from reme_es.server.flavours import Artifact

    bad = tmp_path / "x.zip"
    bad.write_bytes(b"not the real thing")
    with pytest.raises(ServerError, match="checksum mismatch"):
        _verify_pinned(Artifact("g", "x", "1", "zip", "0" * 64), bad)
    assert not bad.exists()


def test_the_elasticsearch_analysis_plugin_needs_a_jdk_with_javac(tmp_path):
    from reme_es.server.es_plugin import ensure_analysis_plugin

    jre = _fake_jdk(tmp_path, "jre25", "25.0.1")
    home = tmp_path / "install" / "elasticsearch-9.3.2"
    home.mkdir(parents=True)
    with pytest.raises(ServerError, match=f"^{jre} has no javac .*REME_ES_JAVA_HOME"):
        ensure_analysis_plugin(home, jre, "9.3.2")
    assert list((tmp_path / "install").iterdir()) == [home]  # nothing half-built left behind
    assert list(home.iterdir()) == []


def _pid() -> int:
    """The pid of a process that has exited (and been reaped): not alive."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_node_keeps_its_flavour_and_new_nodes_get_opensearch_3(tmp_path, monkeypatch):
    """Issue 20: the default moved to opensearch-3; a node started as 2.19 before keeps 2.19 (its data is 2.19's)."""
    from reme_es.server.info import NodeInfo, write_node

    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    monkeypatch.setenv("REME_ES_JAVA_HOME", str(_fake_jdk(tmp_path, "jdk25", "25.0.1")))
    assert node.flavour_of("default") == "opensearch-3"
    assert node.flavour_of("default", "elasticsearch-9") == "elasticsearch-9"
    node.node_dir("default").mkdir(parents=True)
    write_node(
        NodeInfo(
            name="default",
            flavour="opensearch-2.19",
            engine="opensearch",
            version="2.19.1",
            pid=_pid(),
            http_port=9200,
            transport_port=9300,
            home=str(tmp_path),
            dir=str(tmp_path / "nodes/default"),
        )
    )
    assert node.flavour_of("default") == "opensearch-2.19"
    assert node.flavour_of("default", "opensearch-3") == "opensearch-3"  # asked for: then start refuses the mismatch
    assert node.flavour_of("other") == "opensearch-3"
    monkeypatch.setenv("REME_ES_JAVA_HOME", str(_fake_jdk(tmp_path, "jdk17", "17.0.9")))  # 2.19 runs on 17, 3 not
    assert node.flavour_of("other") == "opensearch-2.19"
    assert node.flavour_of("default") == "opensearch-2.19"  # its own
    (node.node_dir("default") / "data" / "nodes").mkdir(parents=True)  # what a started 2.19 node leaves
    with pytest.raises(ServerError, match=r"node 'default' holds opensearch-2.19 data; start it as opensearch-2.19"):
        node.start("opensearch-3", name="default")


def test_the_knn_guard_source_is_adapted_to_opensearch_3():
    """OpenSearch 3 moved the node Client to org.opensearch.transport.client and needs Java 21 bytecode."""
    from dataclasses import replace

    from reme_es.server import knn_guard

    two, three = knn_guard.plugin_for("2.19.1"), knn_guard.plugin_for("3.5.0")
    src2, src3 = (p.source_files()[p.source].decode() for p in (two, three))
    assert "import org.opensearch.client.Client;" in src2 and "org.opensearch.transport.client.Client" not in src2
    assert "import org.opensearch.transport.client.Client;" in src3 and "org.opensearch.client.Client;" not in src3
    assert (two.release, three.release) == ("11", "21")
    assert two.jar_name(two.source_files(), "3.5.0") != three.jar_name(three.source_files(), "3.5.0")
    stale = replace(three, edits=(("import org.opensearch.no.Such;", "x"),))
    with pytest.raises(ServerError, match="no longer contains 'import org.opensearch.no.Such;'"):
        stale.source_files()


def test_concurrent_installs_of_one_flavour_assemble_it_once_and_both_get_it(tmp_path, monkeypatch):
    """Two starts of a flavour not yet installed (a test run beside a bench): one unpacks, the other waits for it,
    and neither unpacks over the other's install or removes it."""
    import threading
    import time
    import zipfile

    from reme_es.server import install
    from reme_es.server.flavours import Artifact, Flavour

    dist = Artifact("org.example", "engine", "1.0", "zip")
    flavour = Flavour("example-1", "opensearch", "1.0", 17, dist)
    archive = tmp_path / "engine-1.0.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("opensearch-1.0/bin/opensearch", "#!/bin/sh\n")
        zf.writestr("opensearch-1.0/lib/engine.jar", "jar")
    assembled: list[str] = []

    def slow_modules(flavour, staged_home, paths):
        assembled.append(threading.current_thread().name)
        time.sleep(0.5)  # long enough for the other start to arrive while this one unpacks

    monkeypatch.setattr(install, "reme_es_home", lambda: tmp_path / "home")
    monkeypatch.setattr(install, "fetch_artifacts", lambda artifacts, into: {dist: archive})
    monkeypatch.setattr(install, "_add_modules", slow_modules)
    homes: dict[str, Path] = {}
    starts = [
        threading.Thread(target=lambda n=n: homes.__setitem__(n, install.install(flavour)), name=n) for n in ("a", "b")
    ]
    for start in starts:
        start.start()
        time.sleep(0.1)
    for start in starts:
        start.join(10)
    assert len(assembled) == 1
    assert homes["a"] == homes["b"] and (homes["a"] / "lib" / "engine.jar").read_text() == "jar"
    assert not (homes["a"].parent.with_name(homes["a"].parent.name + ".partial")).exists()


def test_a_recorded_pid_now_held_by_a_thread_of_another_process_is_not_a_running_node():
    """A node's recorded pid can be reused after it stopped, also as a thread id of another process (`kill(pid, 0)`
    reaches threads): `server start` then thought the node ran and returned at once without starting it."""
    seen: list[int] = []
    done = threading.Event()
    thread = threading.Thread(target=lambda: (seen.append(threading.get_native_id()), done.wait(10)))
    thread.start()
    try:
        while not seen:
            time.sleep(0.01)
        assert seen[0] != os.getpid()
        assert _alive(os.getpid()) and not _alive(seen[0])
    finally:
        done.set()
        thread.join()
