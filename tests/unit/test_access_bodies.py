"""`reme-es access`: the security APIs' bodies (compared with golden JSON), the licence check and the reading back
of a grant, without a server. The real-node cases are tests/reliability/access_cases.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reme_es.adapters import security as s
from reme_es.core.errors import CapabilityError, ConfigError

GOLDEN = Path(__file__).parent / "golden" / "access_roles.json"


ANA = s.Workspace("team", "ana-notes")
ACME = s.MemorieTenant("team", "acme")


def bodies() -> dict:
    return {
        "opensearch_role_read": s.opensearch_role(ANA),
        "opensearch_role_write": s.opensearch_role(ANA, write=True),
        "opensearch_mapping_added": s.mapping_with({"users": ["bob"], "hosts": []}, ["ana", "bob"], ["readers"]),
        "opensearch_mapping_removed": s.mapping_without(
            {"users": ["ana", "bob"], "backend_roles": ["readers"]}, ["ana"], ["readers"]
        ),
        "elasticsearch_role_write": s.elasticsearch_role(ANA, write=True),
        "elasticsearch_role_mapping": s.elasticsearch_role_mapping("reme-es-team-ana-notes", ["ana"], ["readers"]),
        "opensearch_memorie_role_read": s.opensearch_role(ACME),
        "elasticsearch_memorie_role_write": s.elasticsearch_role(ACME, write=True),
    }


def test_bodies_match_golden():
    assert bodies() == json.loads(GOLDEN.read_text())


def test_the_dls_query_is_the_workspace_term_as_a_string_and_covers_only_the_set():
    perm = s.opensearch_role(ANA)["index_permissions"][0]
    assert json.loads(perm["dls"]) == {"term": {"workspace": "ana-notes"}}
    assert "team-*" not in perm["index_patterns"]  # a set named team-x is not covered
    assert not set(perm["allowed_actions"]) & {"indices:monitor/stats", "crud", "write", "manage", "create_index"}


def test_a_grant_reads_back_from_its_role():
    assert s.grant_of_opensearch_role("reme-es-team-ana-notes", s.opensearch_role(ANA, True)) == (ANA, True)
    assert s.grant_of_opensearch_role("reme-es-team-x", s.opensearch_role(ANA)) is None
    assert s.grant_of_opensearch_role("reme-es-memorie.team.acme", s.opensearch_role(ACME)) == (ACME, False)
    assert s.grant_of_opensearch_role("reme-es-memorie.team.acme", s.opensearch_role(ANA)) is None
    for target in (ANA, ACME):
        role = s.elasticsearch_role(target, write=True)
        assert s.target_of_elasticsearch_role(target.role, role) == (target, True)
        assert s.target_of_elasticsearch_role("reme-es-team-x", role) is None
    assert s.grant_of_opensearch_role("all_access", {"index_permissions": [{"index_patterns": ["*"]}]}) is None
    mapping = s.elasticsearch_role_mapping("r", ["ana", "bob"], ["readers"])
    assert s.mapped_of_elasticsearch(mapping) == (["ana", "bob"], ["readers"])


@pytest.mark.parametrize("kind", ["trial", "platinum", "enterprise"])
def test_licences_with_dls_pass(kind):
    s.check_licence({"license": {"type": kind, "status": "active"}})


@pytest.mark.parametrize(
    "licence",
    [
        {"type": "basic", "status": "active"},
        {"type": "trial", "status": "expired"},
        {"type": "gold", "status": "active"},
    ],
)
def test_a_licence_without_dls_is_refused_with_what_to_do(licence):
    with pytest.raises(CapabilityError) as err:
        s.check_licence({"license": licence})
    message = str(err.value)
    assert message.startswith(
        "document-level security needs a platinum, enterprise or trial licence; this cluster's "
        f"licence is {licence['type']} ({licence['status']}). Nothing was granted."
    )
    assert "POST _license/start_trial?acknowledge=true" in message


def test_the_memorie_query_names_each_kind_of_index_and_only_the_prefix_s_memorie_indices():
    perm = s.opensearch_role(ACME)["index_permissions"][0]
    should = json.loads(perm["dls"])["bool"]["should"]
    assert should == [
        {"term": {"tenant_id": "acme"}},
        # the metadata term as Memorie indexes it (metadata.ts: key, U+001F, the value's JSON); has_meta: a vector
        {"bool": {"filter": [{"term": {"meta_kv": 'tenantId\u001f"acme"'}}, {"term": {"has_meta": True}}]}},
        {"term": {"from_tenant_id": "acme"}},
        {"term": {"to_tenant_id": "acme"}},
    ]
    assert perm["index_patterns"] == [
        "team-memorie-memories",
        "team-memorie-memories-v*",
        "team-memorie-vectors",
        "team-memorie-vectors-v*",
        "team-memorie-relations",
        "team-memorie-relations-v*",
    ]
    assert not set(perm["allowed_actions"]) & {"indices:monitor/stats", "crud", "write", "manage", "create_index"}


def test_memorie_and_workspace_roles_never_share_a_name():
    # no set name or workspace key has a '.', so `reme-es-memorie.<prefix>.<tenant>` is never a workspace's role
    assert s.MemorieTenant("memorie", "x").role == "reme-es-memorie.memorie.x"
    assert s.Workspace("memorie", "x").role == "reme-es-memorie-x"
    for bad in ("", "a/b", "a b", "-a", "é", "x" * 129, "a,b", "*"):
        with pytest.raises(ConfigError):
            s.MemorieTenant("team", bad)
    with pytest.raises(ConfigError):
        s.MemorieTenant("Team", "acme")


def test_role_names_are_checked():
    assert s.role_name("team", "ana-notes") == "reme-es-team-ana-notes"
    with pytest.raises(ConfigError):
        s.role_name("team", "Ana Notes")
    with pytest.raises(ConfigError):
        s.dls_query('x"}}')


def test_each_access_level_has_a_role_of_its_own_and_reads_back_as_that_level():
    assert (ANA.role_for(False), ANA.role_for(True)) == ("reme-es-team-ana-notes", "reme-es-write.team-ana-notes")
    assert ACME.role_for(True) == "reme-es-write.memorie.team.acme"
    for target in (ANA, ACME):
        assert s.grant_of_opensearch_role(target.role_for(True), s.opensearch_role(target, True)) == (target, True)
        assert s.grant_of_opensearch_role(target.role_for(True), s.opensearch_role(target, False)) is None
        write = s.elasticsearch_role(target, True)
        assert s.target_of_elasticsearch_role(target.role_for(True), write) == (target, True)
        assert s.Grant.of(target, True, ["carol"], []).role == target.role_for(True)
    # a role of one level for both (before the levels had roles of their own) still reads back as a write grant
    assert s.grant_of_opensearch_role(ANA.role, s.opensearch_role(ANA, True)) == (ANA, True)


@pytest.mark.parametrize("write", [False, True])
def test_a_grant_holds_no_cluster_write_nor_term_vectors_nor_the_read_group(write):
    for target in (ANA, ACME):
        os_role, es_role = s.opensearch_role(target, write), s.elasticsearch_role(target, write)
        cluster = os_role["cluster_permissions"]
        assert [a for a in cluster if "pipeline/put" in a or "admin" in a and not a.endswith("/get")] == []
        assert "cluster_composite_ops_ro" not in cluster and "cluster_composite_ops" not in cluster
        actions = os_role["index_permissions"][0]["allowed_actions"] + es_role["indices"][0]["privileges"]
        assert not set(actions) & {"read", "crud", "write", "index", "manage", "indices:data/read/*"}
        assert [a for a in actions if "tv" in a or "explain" in a or "template" in a or "settings" in a] == []
        writes = [a for a in actions if a.startswith("indices:data/write")]
        assert bool(writes) is write
        assert es_role["cluster"] == ["monitor", "cluster:admin/analyze"]
