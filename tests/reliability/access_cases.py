"""Per-workspace access (`reme-es access`) on a secured node of either engine: two users, each granted one workspace
of one set (or one Memorie tenant of one prefix), read none of each other's documents on any read path, with the
other's key given by hand; writes are bounded by the set (the prefix), not the workspace (the tenant).

A mixin for the secured test classes (ENGINE, FLAVOUR), so the cases reuse their node (`secured` -> (url, ca path),
whose ADMIN may use the security REST API) and the class-scoped fixtures `granted` and `memorie_granted`, imported
into the test module. The grants are made with the CLI, as an admin would. On Elasticsearch, whose node starts on
the basic licence, the fixtures first start the 30-day trial (`start_trial`): document-level security needs it, and a
node has one trial only, so `test_secured.py` checks the refusal on basic before.

The Memorie half (`access grant --memorie-tenant`) is driven through Memorie's real TypeScript stores: the script
memorie/test/access-probe.ts, compiled by the package's build to memorie/dist/test/access-probe.js, writes as the
admin and reads as a grantee, and prints what it saw. `./run test` builds the package once before pytest starts;
a run of these modules alone builds it here when the script is missing (`npm ci && npm run build`, under a file lock
so that parallel sessions build once). Without node and npm the Memorie cases fail, saying so.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.scope import Scope
from reme_es.cli import main
from reme_es.core.errors import AuthError, BulkError, RequestFailed
from reme_es.core.options import IndexOptions
from reme_es.server import secure
from reme_es.server.info import NodeSecurity
from reme_es.store.connect import make_dialect, open_store
from reme_es.testing.data import DIMS, chunk, file_with, unit_vector

from .secured_cases import ADMIN, ADMIN_PW

USER_PW = f"Kq7!vLm3-{uuid.uuid4().hex[:10]}-Wp"  # the security plugin refuses weak passwords
MEMORIE = Path(__file__).resolve().parents[2] / "memorie"
PROBE = MEMORIE / "dist" / "test" / "access-probe.js"


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


def built_memorie() -> Path:
    """The compiled probe script; the package is installed and built first when it is missing (module docstring)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"the Memorie access cases run Memorie's TypeScript stores and need Node 20+ with npm; not found: "
            f"{', '.join(missing)}"
        )
    with open(Path(tempfile.gettempdir()) / "reme-es-memorie-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be building: wait for it, then look again
        if not PROBE.exists():
            for step in (["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], ["npm", "run", "build"]):
                done = subprocess.run(step, cwd=MEMORIE, capture_output=True, text=True, timeout=900)
                assert done.returncode == 0, f"memorie: {' '.join(step)} failed:\n{done.stdout}\n{done.stderr}"
    assert PROBE.exists(), f"the memorie build made no {PROBE}"
    return PROBE


def probe(ns, action: str, user: str, password: str, tenants: list[str], memory: str = ""):
    """Run the Memorie probe (memorie/test/access-probe.ts) as this user and return the JSON it printed."""
    env = {
        **os.environ,
        "REME_ES_PROBE_URL": ns.url,
        "REME_ES_PROBE_USER": user,
        "REME_ES_PROBE_PASSWORD": password,
        "REME_ES_PROBE_CA": ns.ca,
        "REME_ES_PROBE_PREFIX": ns.mprefix,
        "REME_ES_PROBE_TENANTS": ",".join(tenants),
        "REME_ES_PROBE_VECTORS": "1" if ns.knn else "0",
        "REME_ES_PROBE_MEMORY": memory,
    }
    done = subprocess.run(
        ["node", str(built_memorie()), action], env=env, capture_output=True, text=True, timeout=300, cwd=MEMORIE
    )
    assert done.returncode == 0, f"access-probe {action} as {user} failed:\n{done.stderr}"
    return json.loads(done.stdout)


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
    # as `reme-es server start --secure --flavour elasticsearch-9` starts it
    security = NodeSecurity(ca_certs=admin.ca_certs, username=admin.username, password=admin.password)
    await asyncio.to_thread(secure.start_trial, admin.hosts[0], security)
    licence = (await raw(admin, "GET", "/_license", engine="elasticsearch"))["license"]
    assert (licence["type"], licence["status"]) == ("trial", "active"), licence


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
        for role in (f"reme-es-{prefix}-{user}-{tag}", f"reme-es-write.{prefix}-{user}-{tag}"):
            for kind in ("mapping", "role"):
                try:
                    await raw(admin, "DELETE", f"{paths[kind]}{role}", engine=engine)
                except RequestFailed as exc:  # no grant at that level
                    assert exc.status == 404


@pytest.fixture(scope="class")
async def memorie_granted(request, secured):
    """(Class scope; the test module imports it.) Memorie stores at prefix rmem-… holding two tenants' memories,
    vectors (where the node has k-NN) and relations, written by the admin through the TypeScript stores; user carl
    granted tenant acme-… (read), user dora tenant globex-… (read+write), by `reme-es access grant --memorie-tenant`.
    """
    url, ca = secured
    engine, tag = request.cls.ENGINE, uuid.uuid4().hex[:6]
    admin = ClientSettings([url], username=ADMIN, password=ADMIN_PW, ca_certs=ca)
    knn = engine == "elasticsearch" or "2.19" in request.cls.FLAVOUR
    ns = SimpleNamespace(url=url, ca=ca, mprefix=f"rmem-{tag}", admin=admin, knn=knn, engine=engine)
    ns.raw = functools.partial(raw, engine=engine)
    ns.tenant = {"carl": f"acme-{tag}", "dora": f"globex-{tag}"}
    ns.user = {who: f"{who}-{tag}" for who in ("carl", "dora")}
    ns.creds = {
        who: ClientSettings([url], username=ns.user[who], password=USER_PW, ca_certs=ca, max_retries=0)
        for who in ("carl", "dora")
    }
    paths = SECURITY_PATHS[engine]
    if engine == "elasticsearch":
        await start_trial(admin)
    tenants = [ns.tenant["carl"], ns.tenant["dora"]]
    ns.written = await asyncio.to_thread(probe, ns, "write", ADMIN, ADMIN_PW, tenants)
    for who, extra in (("carl", []), ("dora", ["--write"])):
        body = {"password": USER_PW, **({"roles": []} if engine == "elasticsearch" else {})}
        await raw(admin, "PUT", f"{paths['user']}{ns.user[who]}", body, engine=engine)
        args = ("access", "grant", "--memorie-tenant", ns.tenant[who], "--index-prefix", ns.mprefix)
        result = await asyncio.to_thread(cli, url, ca, ADMIN, ADMIN_PW, *args, "--user", ns.user[who], *extra)
        assert result.exit_code == 0, result.output
    yield ns
    made = await raw(admin, "GET", f"/{ns.mprefix}-memorie-*/_alias", engine=engine)
    await raw(admin, "DELETE", f"/{','.join(sorted(made))}", engine=engine)
    levels = ("reme-es-memorie.", "reme-es-write.memorie.")
    for who in ("carl", "dora"):
        await raw(admin, "DELETE", f"{paths['user']}{ns.user[who]}", engine=engine)
    for role in (f"{level}{ns.mprefix}.{ns.tenant[who]}" for who in ("carl", "dora") for level in levels):
        for kind in ("mapping", "role"):
            try:
                await raw(admin, "DELETE", f"{paths[kind]}{role}", engine=engine)
            except RequestFailed as exc:  # a test revoked it
                assert exc.status == 404


def memorie_expected(tenant: str, other: str, knn: bool) -> list[dict]:
    """What the probe's `read` (memorie/test/access-probe.ts) sees as a grantee of `tenant`: its own tenant's
    memories, vectors and relation on every unscoped call and on its own scope; nothing on the other tenant's."""
    own = sorted([f"{tenant}-m1", f"{tenant}-m2"])
    out = [
        {"call": "search.search", "tenant": None, "ids": own},
        {"call": "search.search text", "tenant": None, "ids": own},
        {"call": "search.listIds", "tenant": None, "ids": own},
        {"call": "graph.listRelations", "tenant": None, "ids": [f"{tenant}-r1"]},
    ]
    if knn:
        out += [
            {"call": "vectors.search", "tenant": None, "ids": own},
            {"call": "vectors.listIds", "tenant": None, "ids": own},
        ]
    for asked in (tenant, other):
        mine = asked == tenant
        calls = [
            ("search.search", own),
            ("search.search text", own),
            ("search.search scope+filters", own),
            ("graph.getRelated out", [f"{tenant}-m2"]),
            ("graph.getRelated in", [f"{tenant}-m1"]),
            ("graph.getRelated both", [f"{tenant}-m2"]),
            ("graph.traverse", [f"{tenant}-m2"]),
        ]
        if knn:
            calls += [("vectors.search filter", own), ("vectors.scoped.search", own), ("vectors.scoped.listIds", own)]
        out += [{"call": call, "tenant": asked, "ids": ids if mine else []} for call, ids in calls]
    return out


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
            g.key["bob"]: (True, [g.key["bob"]], f"reme-es-write.{g.prefix}-{g.key['bob']}"),
        }
        # a user of an external realm (unknown to the security plugin) and a backend role, on bob's workspace at the
        # read level: bob keeps his write level; taken back user by user, then the level whole
        extra = ("--index-prefix", g.prefix, "--workspace-key", g.key["bob"])
        made = cli(
            g.url, g.ca, ADMIN, ADMIN_PW, "access", "grant", *extra, "--user", "carol", "--backend-role", "team",
            "--create-mapping-only",
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        left = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--user", "carol")
        assert left.exit_code == 0, left.output
        assert left.output.splitlines() == [
            f"left: {g.key['bob']}\tread\treme-es-{g.prefix}-{g.key['bob']}\tbackend role team",
            f"left: {g.key['bob']}\tread+write\treme-es-write.{g.prefix}-{g.key['bob']}\tuser {g.key['bob']}",
        ]
        gone = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--backend-role", "team")
        assert gone.exit_code == 0, gone.output
        after = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix, "--json")
        assert {r["role"]: r["users"] for r in json.loads(after.output)} == {v[2]: v[1] for v in rows.values()}
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
                assert len(await store.links.get_files()) == expect
                counts = await store.inspect.health_counts()
                assert counts["files"] == counts["chunks"] == expect
                if g.knn:
                    assert len(await store.vector_search(unit_vector(1), 10)) == expect
                    assert len((await store.search("heron", unit_vector(1), 10)).hits) == expect
                assert await store.inspect.count("chunks") == expect
                assert [w["workspace"] for w in await store.inspect.workspaces()] == [me]  # the registry too
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
        assert f"workspace {g.key['bob']} has nothing in index set" in other.output  # and names no folder
        assert "secret of bob" not in other.output and str(g.folders["bob"]) not in other.output
        assert "The set records 1 other workspace(s)" in other.output  # her own: Bob's is not counted
        listing = cli(
            g.url, g.ca, ana, pw, "status", "--workspaces", "--index-prefix", g.prefix, "--workspace-key", ana, "--json"
        )
        assert str(g.folders["bob"]) not in listing.output and g.key["bob"] not in listing.output
        # a grantee's status works: the workspaces it may read, its counts, and no index statistics (they count
        # every workspace's documents, and the grant leaves them out)
        assert listing.exit_code == 0, listing.output
        info = json.loads(listing.output)
        assert ([w["workspace"] for w in info["workspaces"]], info["indices"]) == ([ana], {})
        assert info["workspace_counts"]["files"] == 1
        text = cli(g.url, g.ca, ana, pw, "status", "--workspaces", "--index-prefix", g.prefix, "--workspace-key", ana)
        assert text.exit_code == 0, text.output
        assert "indices: no statistics for these credentials" in text.output and g.key["bob"] not in text.output

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
            assert len(await store.links.get_files()) == 2
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

    # ------------------------------------------------------------------------------------------ Memorie tenants
    def test_memorie_tenant_grants_are_listed_apart_from_workspaces_and_revoked(self, memorie_granted):
        m = memorie_granted
        listed = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", m.mprefix, "--json")
        assert listed.exit_code == 0, listed.output
        rows = {
            r["role"]: (r["memorie_tenant"], r["workspace"], r["write"], r["users"]) for r in json.loads(listed.output)
        }
        assert rows == {
            f"reme-es-memorie.{m.mprefix}.{m.tenant['carl']}": (m.tenant["carl"], None, False, [m.user["carl"]]),
            f"reme-es-write.memorie.{m.mprefix}.{m.tenant['dora']}": (m.tenant["dora"], None, True, [m.user["dora"]]),
        }
        # a workspace of a set that does not exist (the Memorie prefix holds no index set) is refused
        ws = ("--index-prefix", m.mprefix, "--workspace-key", "acme")
        nowhere = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "grant", *ws, "--user", m.user["carl"])
        assert nowhere.exit_code == 2, nowhere.output
        assert f"index set {m.mprefix} does not exist on this cluster" in nowhere.output
        # a second level on carl's tenant (fay of an external realm, backend role ops: read+write) is listed apart
        extra = ("--index-prefix", m.mprefix, "--memorie-tenant", m.tenant["carl"])
        made = cli(
            m.url, m.ca, ADMIN, ADMIN_PW, "access", "grant", *extra, "--user", "fay", "--backend-role", "ops",
            "--write", "--create-mapping-only",
        )  # fmt: skip
        carl = f"memorie tenant {m.tenant['carl']}"
        assert made.output.strip() == (
            f"granted: {carl}\tread+write\treme-es-write.memorie.{m.mprefix}.{m.tenant['carl']}\tuser fay, "
            "backend role ops"
        )
        text = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", m.mprefix).output.splitlines()
        assert text == [  # by role name
            f"{carl}\tread\treme-es-memorie.{m.mprefix}.{m.tenant['carl']}\tuser {m.user['carl']}",
            f"{carl}\tread+write\treme-es-write.memorie.{m.mprefix}.{m.tenant['carl']}\tuser fay, backend role ops",
            f"memorie tenant {m.tenant['dora']}\tread+write\treme-es-write.memorie.{m.mprefix}.{m.tenant['dora']}\t"
            f"user {m.user['dora']}",
        ]
        left = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--user", "fay")
        assert left.output.splitlines() == [
            f"left: {carl}\tread\treme-es-memorie.{m.mprefix}.{m.tenant['carl']}\tuser {m.user['carl']}",
            f"left: {carl}\tread+write\treme-es-write.memorie.{m.mprefix}.{m.tenant['carl']}\tbackend role ops",
        ]
        gone = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--backend-role", "ops")
        assert gone.exit_code == 0, gone.output
        after = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", m.mprefix, "--json")
        assert sorted(r["role"] for r in json.loads(after.output)) == sorted(rows)
        # a Memorie grant names its prefix, and a tenant a role name can hold
        unnamed = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "grant", "--memorie-tenant", "x", "--user", "fay")
        assert unnamed.exit_code == 2 and "--index-prefix" in unnamed.output, unnamed.output
        bad = cli(m.url, m.ca, ADMIN, ADMIN_PW, "access", "grant", *extra[:2], "--memorie-tenant", "a/b", "--user", "f")
        assert bad.exit_code == 2 and "Memorie tenant 'a/b' cannot be granted" in bad.output, bad.output

    @pytest.mark.parametrize("who", ["carl", "dora"])
    async def test_memorie_stores_read_only_the_granted_tenant(self, memorie_granted, who):
        m = memorie_granted
        tenant, other = m.tenant[who], m.tenant["dora" if who == "carl" else "carl"]
        # every read method of Memorie's three stores, unscoped, on its own tenant and on the other's asked by hand
        seen = await asyncio.to_thread(probe, m, "read", m.user[who], USER_PW, [tenant, other])
        assert seen == memorie_expected(tenant, other, m.knn)
        # as the admin, the same calls see both tenants (the probe and the data are not what hides them)
        everything = await asyncio.to_thread(probe, m, "read", ADMIN, ADMIN_PW, [tenant, other])
        both = {(r["call"], r["tenant"]): r["ids"] for r in everything}
        assert both[("search.search", None)] == sorted(f"{t}-m{i}" for t in (tenant, other) for i in (1, 2))
        assert both[("graph.getRelated out", other)] == [f"{other}-m2"]
        # the raw read paths on the Memorie indices, with no filter of a store's at all
        creds, pattern = m.creds[who], f"/{m.mprefix}-memorie-*"
        found = await m.raw(creds, "POST", f"{pattern}/_search", {"query": {"match_all": {}}, "size": 100})
        kinds = ("memories", "vectors", "relations") if m.knn else ("memories", "relations")
        hits = sorted((h["_index"].split("-memorie-")[1].split("-v")[0], h["_id"]) for h in found["hits"]["hits"])
        own = {"memories": ["m1", "m2"], "vectors": ["m1", "m2"], "relations": ["r1"]}
        assert hits == sorted((k, f"{tenant}-{x}") for k in kinds for x in own[k])
        for kind, want in (("memories", 2), ("relations", 1)):
            counted = await m.raw(creds, "POST", f"/{m.mprefix}-memorie-{kind}/_count", {"query": {"match_all": {}}})
            assert counted["count"] == want
        theirs = {"query": {"term": {"tenant_id": other}}}
        assert (await m.raw(creds, "POST", f"/{m.mprefix}-memorie-memories/_count", theirs))["count"] == 0
        docs = [
            {"_index": f"{m.mprefix}-memorie-{kind}", "_id": f"{other}-{x}"} for kind in kinds for x in own[kind]
        ] + [{"_index": f"{m.mprefix}-memorie-memories", "_id": f"{tenant}-m1"}]
        got = await m.raw(creds, "POST", "/_mget", {"docs": docs})
        assert [d.get("found") for d in got["docs"]] == [False] * (len(docs) - 1) + [True]
        with pytest.raises(RequestFailed) as err:  # GET by id
            await m.raw(creds, "GET", f"/{m.mprefix}-memorie-memories/_doc/{other}-m1")
        assert err.value.status == 404

    async def test_memorie_writes_read_grant_refused_write_grant_bounded_by_the_prefix(self, memorie_granted):
        m = memorie_granted
        carl, dora = m.tenant["carl"], m.tenant["dora"]
        # a read grant writes nothing, not even its own tenant's memory
        refused = await asyncio.to_thread(probe, m, "index-as", m.user["carl"], USER_PW, [], f"{carl}-new,{carl}")
        assert (refused["ok"], refused["status"]) == (False, 403), refused
        # a write grant writes its own tenant's memory ...
        own = await asyncio.to_thread(probe, m, "index-as", m.user["dora"], USER_PW, [], f"{dora}-new,{dora}")
        assert own == {"ok": True}
        # ... and, document-level security confining reads only, a memory of the other tenant: the prefix is the
        # write boundary (docs/GUARANTEES.md), and carl reads what dora planted
        planted = await asyncio.to_thread(probe, m, "index-as", m.user["dora"], USER_PW, [], f"{carl}-planted,{carl}")
        assert planted == {"ok": True}
        seen = await m.raw(m.creds["carl"], "POST", f"/{m.mprefix}-memorie-memories/_search", {"size": 10})
        assert sorted(h["_id"] for h in seen["hits"]["hits"]) == [f"{carl}-m1", f"{carl}-m2", f"{carl}-planted"]
        for id_ in (f"{carl}-planted", f"{dora}-new"):
            await m.raw(m.admin, "DELETE", f"/{m.mprefix}-memorie-memories/_doc/{id_}", params={"refresh": "true"})
