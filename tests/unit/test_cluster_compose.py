"""docker/opensearch-3-cluster.yml, the three-node compose file: valid YAML whose nodes agree on names, seed hosts,
initial cluster managers, cluster name and the shared snapshot volume (no Docker engine here to run it)."""

from __future__ import annotations

from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "opensearch-3-cluster.yml"


def _nodes(compose: dict) -> dict[str, dict]:
    return {name: s for name, s in compose["services"].items() if "node.name" in s.get("environment", {})}


def test_the_cluster_compose_file_is_three_nodes_that_find_each_other():
    compose = yaml.safe_load(COMPOSE.read_text())
    nodes = _nodes(compose)
    assert sorted(nodes) == ["os-1", "os-2", "os-3"]
    for service, spec in nodes.items():
        env = spec["environment"]
        assert env["node.name"] == service  # seed hosts name services; the node names must be the same words
        assert env["discovery.seed_hosts"].split(",") == sorted(nodes)
        assert env["cluster.initial_cluster_manager_nodes"].split(",") == sorted(nodes)
        assert env["cluster.name"] == "reme-es-docker"
        assert env["DISABLE_SECURITY_PLUGIN"] == "true"
        assert "discovery.type" not in env
        assert spec["image"].startswith("opensearchproject/opensearch:3.")
    assert [s.get("ports") for s in nodes.values()] == [["127.0.0.1:9200:9200"], None, None]


def test_every_node_has_its_own_data_volume_and_the_shared_snapshot_volume_at_its_path_repo():
    compose = yaml.safe_load(COMPOSE.read_text())
    nodes = _nodes(compose)
    data = []
    for spec in nodes.values():
        mounts = dict(reversed(v.split(":", 1)) for v in spec["volumes"])
        assert mounts[spec["environment"]["path.repo"]] == "reme-es-snapshots"
        data.append(mounts["/usr/share/opensearch/data"])
    assert len(set(data)) == 3
    assert set(compose["volumes"]) == {*data, "reme-es-snapshots"}
    owner = compose["services"]["snapshots-owner"]
    assert owner["volumes"] == ["reme-es-snapshots:/mnt/snapshots"]
    conditions = [s["depends_on"]["snapshots-owner"]["condition"] for s in nodes.values()]
    assert conditions == ["service_completed_successfully"] * 3
