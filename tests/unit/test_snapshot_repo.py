"""Pure parts of backups and the local cluster: the snapshot repository folder, `path.repo` in a node's settings,
cluster members' settings per engine, and the recorded clusters of `reme-es server cluster` (no node started)."""

from __future__ import annotations

import json
import os
import socket

import pytest
import yaml

from reme_es.core.errors import ServerError
from reme_es.server import cluster, node, process
from reme_es.server.flavours import get_flavour
from reme_es.server.node_config import _node_settings
from reme_es.server.snapshot_repo import prepare_snapshot_repo, repo_settings


def test_path_repo_is_rendered_into_the_node_settings_as_a_list(tmp_path):
    repo = tmp_path / "snaps"
    for flavour in ("opensearch-2.19", "opensearch-3", "elasticsearch-9"):
        settings = repo_settings(None, repo)
        rendered = yaml.safe_load(_node_settings(get_flavour(flavour), tmp_path / "n", 9200, 9300, settings))
        assert rendered["path.repo"] == [str(repo)]
    assert "path.repo" not in yaml.safe_load(_node_settings(get_flavour("opensearch-3"), tmp_path / "n", 1, 2))
    assert repo_settings({"a": 1}, None) == {"a": 1}


def test_the_snapshot_repo_folder_is_created_for_the_run_user(tmp_path):
    repo = prepare_snapshot_repo(tmp_path / "deep" / "snaps")
    assert repo == (tmp_path / "deep" / "snaps").resolve() and repo.is_dir()
    user = process._run_user()
    if user is not None:  # as root the JVM runs as the unprivileged user: the folder is that user's
        assert (repo.stat().st_uid, repo.stat().st_gid) == (user.pw_uid, user.pw_gid)
        assert all(p.stat().st_mode & 0o001 for p in repo.parents)
    else:
        assert os.access(repo, os.W_OK)


def test_a_snapshot_repo_path_that_cannot_be_a_folder_is_refused_with_the_reason(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ServerError, match=r"cannot create the snapshot repository folder .*/file/snaps: Not a dir"):
        prepare_snapshot_repo(tmp_path / "file" / "snaps")
    with pytest.raises(ServerError, match=r"snapshot repository path .*/file exists and is not a folder"):
        prepare_snapshot_repo(tmp_path / "file")


def test_a_running_node_is_not_silently_kept_without_the_snapshot_repo_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    running = node.NodeInfo("n", "opensearch-2.19", "opensearch", "2.19.1", os.getpid(), 1, 2, "", "")
    monkeypatch.setattr(node, "_running_as", lambda name, flavour: running)
    with pytest.raises(ServerError, match=r"node 'n' already runs with no path.repo; stop it .* --snapshot-repo"):
        node.start("opensearch-2.19", name="n", snapshot_repo=tmp_path / "r")
    running.snapshot_repo = str((tmp_path / "r").resolve())
    assert node.start("opensearch-2.19", name="n", snapshot_repo=tmp_path / "r") is running


def test_cluster_members_bootstrap_with_their_engines_setting():
    os_cluster = cluster.make_cluster("opensearch-2.19", ["a", "b", "c"])
    es_cluster = cluster.make_cluster("elasticsearch-9", ["a", "b", "c"])
    assert os_cluster.settings("b")["cluster.initial_cluster_manager_nodes"] == ["a", "b", "c"]
    assert "cluster.initial_master_nodes" not in os_cluster.settings("b")
    assert es_cluster.settings("b")["cluster.initial_master_nodes"] == ["a", "b", "c"]
    assert "cluster.initial_cluster_manager_nodes" not in es_cluster.settings("b")
    seeds = os_cluster.settings("a")["discovery.seed_hosts"]
    assert seeds == [f"127.0.0.1:{os_cluster.transport_ports[n]}" for n in "abc"]


def test_a_recorded_cluster_keeps_its_members_and_ports_and_refuses_another_size(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    monkeypatch.setattr(cluster.Cluster, "start", lambda self, timeout=0: None)
    first = cluster.start_local("team", "opensearch-2.19", 3, None, None, tmp_path / "snaps")
    assert first.names == ["team-1", "team-2", "team-3"] and first.cluster_name == "reme-es-team"
    low = first.http_ports["team-1"]
    assert [first.http_ports[n] for n in first.names] == [low, low + 1, low + 2] and low >= 9200
    assert first.snapshot_repo == str((tmp_path / "snaps").resolve())
    again = cluster.start_local("team")
    assert (again.http_ports, again.transport_ports, again.flavour) == (
        first.http_ports,
        first.transport_ports,
        "opensearch-2.19",
    )
    assert again.snapshot_repo == first.snapshot_repo  # kept: a repository registered there stays usable
    with pytest.raises(ServerError, match=r"cluster 'team' has 3 members; start it with --nodes 3"):
        cluster.start_local("team", nodes=2)
    with pytest.raises(ServerError, match=r"cluster 'team' runs opensearch-2.19"):
        cluster.start_local("team", flavour="elasticsearch-9")
    assert json.loads((tmp_path / "clusters" / "team.json").read_text())["names"] == first.names
    view = cluster.local_status("team")
    assert [(m["name"], m["running"], m["pid"]) for m in view["nodes"]] == [(n, False, None) for n in first.names]
    assert view["running"] is False and "health" not in view
    cluster.forget_local("team")
    assert cluster.local_status("team")["reason"].startswith("never started")


def test_a_cluster_whose_ports_are_taken_is_refused_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServerError, match=rf"ports \[{port}.*\] on 127.0.0.1 are taken; choose another first"):
            cluster.start_local("busy", "opensearch-2.19", 3, None, port)
    assert not (tmp_path / "nodes").exists()


def test_a_node_started_again_without_the_option_keeps_its_snapshot_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    assert node._snapshot_repo("fresh", None) is None  # never given one: no path.repo, as before
    (tmp_path / "nodes" / "n").mkdir(parents=True)
    info = node.NodeInfo("n", "opensearch-2.19", "opensearch", "2.19.1", 1, 1, 2, "", str(tmp_path / "nodes" / "n"))
    info.snapshot_repo = "/srv/snaps"
    node.write_node(info)
    assert node._snapshot_repo("n", None) == "/srv/snaps"
    assert node._snapshot_repo("n", tmp_path / "other") == tmp_path / "other"
