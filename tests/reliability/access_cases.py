"""Per-workspace access (`reme-es access`) on a secured node of either engine: two users, each granted one workspace
of one set, read none of each other's documents on any read path, with the other's key given by hand; writes are
bounded by the set, not the workspace.

A mixin for the secured test classes (ENGINE, FLAVOUR), so the cases reuse their node (`secured` -> (url, ca path),
whose ADMIN may use the security REST API) and the class-scoped fixture `granted`, imported into the test module.
The grants are made with the CLI, as an admin would. On Elasticsearch, whose node starts on the basic licence,
`granted` first starts the 30-day trial (`start_trial`): document-level security needs it, and a node has one trial
only, so `test_secured.py` checks the refusal on basic before.
"""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.scope import Scope
from reme_es.cli import main
from reme_es.core.errors import AuthError, BulkError, RequestFailed
from reme_es.core.options import IndexOptions
from reme_es.store.connect import make_dialect, open_store
from reme_es.testing.data import DIMS, chunk, file_with, unit_vector

from .secured_cases import ADMIN, ADMIN_PW

USER_PW = f"Kq7!vLm3-{uuid.uuid4().hex[:10]}-Wp"  # the security plugin refuses weak passwords


def cli(url: str, ca: str, user: str, password: str, *args: str):
    """`reme-es ARGS` with this user's credentials in the environment, as a user would run it."""
    env = {"REME_ES_HOSTS": url, "REME_ES_CA_CERTS": ca, "REME_ES_USERNAME": user, "REME_ES_PASSWORD": password}
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


async def raw(settings: ClientSettings, method: str, path: str, body=None, params=None, engine: str = "opensearch"):
    """One request to the node as these credentials, with no filter of the client's (a reader's raw view)."""
    dialect = make_dialect(engine, settings)
    try:
        return await dialect.transport.request(method, path, body, params)
    finally:
        await dialect.transport.close()


# Per engine: the security API's paths for a user, a role and a role mapping.
SECURITY_PATHS = {
    "opensearch": {
        "user": "/_plugins/_security/api/internalusers/",
        "role": "/_plugins/_security/api/roles/",
        "mapping": "/_plugins/_security/api/rolesmapping/",
    },
    "elasticsearch": {"user": "/_security/user/", "role": "/_security/role/", "mapping": "/_security/role_mapping/"},
}


async def start_trial(admin: ClientSettings) -> None:
    """Put an Elasticsearch node on the 30-day trial licence (document-level security), unless it has one already."""
    licence = (await raw(admin, "GET", "/_license", engine="elasticsearch"))["license"]
    if licence["type"] == "trial" and licence["status"] == "active":
        return
    eligible = await raw(admin, "GET", "/_license/trial_status", engine="elasticsearch")
    assert eligible["eligible_to_start_trial"], f"this node's trial was used up (licence now {licence['type']})"
    params = {"acknowledge": "true"}
    started = await raw(admin, "POST", "/_license/start_trial", params=params, engine="elasticsearch")
    assert (started["trial_was_started"], started["type"]) == (True, "trial"), started


@pytest.fixture(scope="class")
async def granted(request, secured, tmp_path_factory):
    """(Class scope; the test module imports it.) A set with workspaces ana-… and bob-… (a file each, claimed from
    their folders), users ana (read grant) and bob (read+write grant) made through `reme-es access grant`."""
    url, ca = secured
    admin = ClientSettings([url], username=ADMIN, password=ADMIN_PW, ca_certs=ca)
    engine, tag = request.cls.ENGINE, uuid.uuid4().hex[:6]
    # vectors where the node has k-NN: Elasticsearch always, OpenSearch 2.19 (its plugin; the 3.4 flavour has none)
    prefix, knn = f"racc-{tag}", engine == "elasticsearch" or "2.19" in request.cls.FLAVOUR
    paths = SECURITY_PATHS[engine]
    ns = SimpleNamespace(url=url, ca=ca, prefix=prefix, admin=admin, knn=knn, engine=engine, ids={}, folders={})
    ns.raw = functools.partial(raw, engine=engine)  # a request to this node's engine
    if engine == "elasticsearch":
        await start_trial(admin)
    for user in ("ana", "bob"):
        body = {"password": USER_PW, **({"roles": []} if engine == "elasticsearch" else {})}
        await raw(admin, "PUT", f"{paths['user']}{user}-{tag}", body, engine=engine)
        ns.folders[user] = tmp_path_factory.mktemp(f"{user}-notes")
        key = f"{user}-{tag}"
        store = await open_store(admin, prefix, engine, IndexOptions(dims=DIMS if knn else None), workspace=key)
        try:
            await store.claim(str(ns.folders[user]))
            c = chunk("notes/day.md", f"heron secret of {user} {tag}", vector=unit_vector(1) if knn else None)
            assert (await store.upsert([file_with("notes/day.md", [c])])).failures == []
        finally:
            await store.close()
    ns.key = {u: f"{u}-{tag}" for u in ("ana", "bob")}
    ns.creds = {
        u: ClientSettings([url], username=f"{u}-{tag}", password=USER_PW, ca_certs=ca, max_retries=0)
        for u in ("ana", "bob")
    }
    for user, extra in (("ana", []), ("bob", ["--write"])):
        result = await asyncio.to_thread(
            cli,
            url,
            ca,
            ADMIN,
            ADMIN_PW,
            "access",
            "grant",
            "--index-prefix",
            prefix,
            "--workspace-key",
            ns.key[user],
            "--user",
            f"{user}-{tag}",
            *extra,
        )
        assert result.exit_code == 0, result.output
    # every write of the setup visible before the admin lists them (a store refreshes in the background after its
    # writes: without this the listing raced that refresh on a loaded machine)
    await raw(admin, "POST", f"/{prefix}-*/_refresh", engine=engine)
    everything = {"size": 100, "query": {"match_all": {}}}
    all_docs = await raw(admin, "POST", f"/{prefix}-*/_search", everything, engine=engine)
    for hit in all_docs["hits"]["hits"]:  # every stored doc of both workspaces, as the admin sees them
        ns.ids.setdefault(hit["_source"]["workspace"], []).append((hit["_index"], hit["_id"]))
    counts = {u: len(ns.ids.get(ns.key[u], [])) for u in ("ana", "bob")}
    assert set(counts.values()) == {3}, f"a file doc, a chunk and a registry record each; found {ns.ids}"
    yield ns
    made = await raw(admin, "GET", f"/{prefix}-*/_alias", engine=engine)  # by name: ES refuses a wildcard delete
    await raw(admin, "DELETE", f"/{','.join(sorted(made))}", engine=engine)
    for user in ("ana", "bob"):
        await raw(admin, "DELETE", f"{paths['user']}{user}-{tag}", engine=engine)
        await raw(admin, "DELETE", f"{paths['role']}reme-es-{prefix}-{user}-{tag}", engine=engine)
        await raw(admin, "DELETE", f"{paths['mapping']}reme-es-{prefix}-{user}-{tag}", engine=engine)


class AccessCases:
    """Reads private per workspace on every read path; the set is the write boundary."""

    FLAVOUR = ""

    def test_access_list_and_revoke(self, granted):
        g = granted
        listed = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix, "--json")
        assert listed.exit_code == 0, listed.output
        rows = {r["workspace"]: (r["write"], r["users"], r["role"]) for r in json.loads(listed.output)}
        assert rows == {
            g.key["ana"]: (False, [g.key["ana"]], f"reme-es-{g.prefix}-{g.key['ana']}"),
            g.key["bob"]: (True, [g.key["bob"]], f"reme-es-{g.prefix}-{g.key['bob']}"),
        }
        # a third grant, taken back user by user, then whole
        extra = ("--index-prefix", g.prefix, "--workspace-key", "carol-x")
        assert (
            cli(
                g.url, g.ca, ADMIN, ADMIN_PW, "access", "grant", *extra, "--user", "carol", "--backend-role", "team"
            ).exit_code
            == 0
        )
        left = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--user", "carol")
        assert left.output.strip() == f"left: carol-x\tread\treme-es-{g.prefix}-carol-x\tbackend role team"
        gone = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra)
        assert gone.output.strip() == "revoked: workspace carol-x is granted to nobody"
        after = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix, "--json")
        assert {r["workspace"] for r in json.loads(after.output)} == {g.key["ana"], g.key["bob"]}
        # a user may not grant
        denied = cli(
            g.url,
            g.ca,
            g.key["bob"],
            USER_PW,
            "access",
            "grant",
            "--index-prefix",
            g.prefix,
            "--workspace-key",
            g.key["ana"],
            "--user",
            g.key["bob"],
        )
        assert denied.exit_code == 1 and "403" in denied.output

    @pytest.mark.parametrize("user", ["ana", "bob"])
    async def test_every_read_path_returns_only_the_granted_workspace(self, granted, user):
        g = granted
        me, other = g.key[user], g.key["bob" if user == "ana" else "ana"]
        creds = g.creds[user]
        options = IndexOptions(dims=DIMS if g.knn else None)
        # the store, own key: its own file; the other's key given by hand: nothing, on every store read
        for key, expect in ((me, 1), (other, 0)):
            store = await open_store(creds, g.prefix, g.engine, options, create=False, workspace=key)
            try:
                hits = await store.keyword_search("heron", 10)
                assert [h.chunk.text.split()[3] for h in hits] == [user] * expect
                assert len(await store.get_files()) == expect
                counts = await store.health_counts()
                assert counts["files"] == counts["chunks"] == expect
                if g.knn:
                    assert len(await store.vector_search(unit_vector(1), 10)) == expect
                    assert len((await store.search("heron", unit_vector(1), 10)).hits) == expect
                assert await store.count("chunks") == expect
                assert [w["workspace"] for w in await store.workspaces()] == [me]  # the registry too
            finally:
                await store.close()
        # the raw read paths, with no workspace filter of the client at all
        everything = {"query": {"match_all": {}}, "size": 100}
        found = await g.raw(creds, "POST", f"/{g.prefix}-*/_search", everything)
        assert {h["_source"]["workspace"] for h in found["hits"]["hits"]} == {me}
        assert len(found["hits"]["hits"]) == 3
        counted = await g.raw(creds, "POST", f"/{g.prefix}-chunks/_count", {"query": {"match_all": {}}})
        assert counted["count"] == 1
        theirs = await g.raw(creds, "POST", f"/{g.prefix}-chunks/_count", {"query": {"term": {"workspace": other}}})
        assert theirs["count"] == 0
        docs = [{"_index": index, "_id": id_, "routing": other} for index, id_ in g.ids[other]]
        got = await g.raw(creds, "POST", "/_mget", {"docs": docs})
        assert [d.get("found") for d in got["docs"]] == [False] * len(docs)
        for index, id_ in g.ids[other]:  # GET by id
            with pytest.raises(RequestFailed) as err:
                await g.raw(creds, "GET", f"/{index}/_doc/{quote(id_, safe='')}", params={"routing": other})
            assert err.value.status == 404
        lines = [{"index": f"{g.prefix}-chunks"}, everything, {"index": f"{g.prefix}-workspaces"}, everything]
        multi = await g.raw(creds, "POST", "/_msearch", "".join(json.dumps(line) + "\n" for line in lines))
        assert [{h["_source"]["workspace"] for h in r["hits"]["hits"]} for r in multi["responses"]] == [{me}, {me}]
        page = await g.raw(creds, "POST", f"/{g.prefix}-*/_search", {**everything, "size": 1}, params={"scroll": "1m"})
        seen = [h["_source"]["workspace"] for h in page["hits"]["hits"]]
        while page["hits"]["hits"]:
            page = await g.raw(creds, "POST", "/_search/scroll", {"scroll": "1m", "scroll_id": page["_scroll_id"]})
            seen += [h["_source"]["workspace"] for h in page["hits"]["hits"]]
        assert seen == [me] * 3

    def test_cli_search_and_listing_show_nothing_of_the_other_workspace(self, granted):
        g = granted
        ana, pw = g.key["ana"], USER_PW
        base = ("--index-prefix", g.prefix, "--mode", "keyword")
        own = cli(g.url, g.ca, ana, pw, "search", "heron", *base, "--workspace-key", ana, "--json")
        assert own.exit_code == 0, own.output
        assert [h["text"].split()[3] for h in json.loads(own.output)["hits"]] == ["ana"]
        other = cli(g.url, g.ca, ana, pw, "search", "heron", *base, "--workspace-key", g.key["bob"])
        # Bob's record is out of Ana's sight: his workspace is unknown to her, and the error names nothing of his
        assert other.exit_code == 2, other.output
        assert f"workspace {g.key['bob']} (folder" in other.output
        assert "secret of bob" not in other.output and str(g.folders["bob"]) not in other.output
        assert "The set records 1 other workspace(s)" in other.output  # her own: Bob's is not counted
        listing = cli(
            g.url, g.ca, ana, pw, "status", "--workspaces", "--index-prefix", g.prefix, "--workspace-key", ana, "--json"
        )
        assert str(g.folders["bob"]) not in listing.output and g.key["bob"] not in listing.output

    async def test_writes_read_grant_refused_write_grant_bounded_by_the_set(self, granted):
        g = granted
        ana, bob = g.key["ana"], g.key["bob"]
        options = IndexOptions(dims=DIMS if g.knn else None)
        vector = unit_vector(2) if g.knn else None
        # a read grant writes nothing, not even into its own workspace
        store = await open_store(g.creds["ana"], g.prefix, g.engine, options, create=False, workspace=ana)
        try:
            with pytest.raises((AuthError, BulkError)) as err:
                outcome = await store.upsert([file_with("notes/new.md", [chunk("notes/new.md", "x", vector=vector)])])
                outcome.raise_for_failures()
            assert "403" in str(err.value)
        finally:
            await store.close()
        # a write grant writes its own workspace through the store ...
        store = await open_store(g.creds["bob"], g.prefix, g.engine, options, workspace=bob)
        try:
            c = chunk("notes/more.md", "heron again bob", vector=vector)
            assert (await store.upsert([file_with("notes/more.md", [c])])).failures == []
            assert len(await store.get_files()) == 2
            await store.delete("notes/more.md")
        finally:
            await store.close()
        # ... may not touch the set's indices (no index deletion or mapping change: Elasticsearch's `index` privilege
        # would allow a mapping change, so its grant names the document write actions instead) ...
        with pytest.raises(AuthError):
            await g.raw(g.creds["bob"], "DELETE", f"/{g.prefix}-chunks-1")
        with pytest.raises(AuthError):
            await g.raw(g.creds["bob"], "PUT", f"/{g.prefix}-chunks/_mapping", {"properties": {"x": {"type": "long"}}})
        # ... and may not update a document in place (both engines refuse updates under document-level security) ...
        with pytest.raises((RequestFailed, AuthError)):
            await g.raw(
                g.creds["bob"],
                "POST",
                f"/{g.prefix}-chunks/_update/{g.ids[bob][0][1]}",
                {"doc": {"x": 1}},
                params={"routing": bob},
            )
        # ... but document-level security does not confine writes: a document indexed by id into Ana's workspace
        # lands, and Ana reads it. The set is the write boundary (docs/GUARANTEES.md says so).
        planted = Scope(ana).stored_id("planted")
        await g.raw(
            g.creds["bob"],
            "PUT",
            f"/{g.prefix}-files/_doc/{planted}",
            {"workspace": ana, "path": "planted.md"},
            params={"routing": ana, "refresh": "true"},
        )
        seen = await g.raw(g.creds["ana"], "POST", f"/{g.prefix}-files/_search", {"query": {"match_all": {}}})
        assert planted in {h["_id"] for h in seen["hits"]["hits"]}
        await g.raw(g.admin, "DELETE", f"/{g.prefix}-files/_doc/{planted}", params={"routing": ana, "refresh": "true"})
