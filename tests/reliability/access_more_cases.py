"""Per-workspace access, the second round (issue 47), on the same secured nodes and `granted` fixture as
access_cases.py: a grant changes no other user's access, a read grant writes nothing and opens on the admin's
pipeline, term vectors are refused and suggesters named, strict workspaces give nothing of another workspace to term
statistics, bad input to `access` is refused, and the refusals under document-level security are said in one line
and not retried."""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import quote

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.port import Action
from reme_es.adapters.scope import Scope
from reme_es.adapters.security import Workspace, elasticsearch_role, elasticsearch_role_mapping, opensearch_role
from reme_es.core.errors import AuthError, BulkError, RequestFailed
from reme_es.core.options import IndexOptions, strict_set
from reme_es.store.connect import open_store
from reme_es.testing.data import DIMS, chunk, file_with, unit_vector

from .access_cases import SECURITY_PATHS, USER_PW, cli
from .secured_cases import ADMIN, ADMIN_PW


async def as_admin(g, *args: str):
    """`reme-es ARGS` as the admin on the node of `g`, from a coroutine (the CLI runs its own event loop)."""
    return await asyncio.to_thread(cli, g.url, g.ca, ADMIN, ADMIN_PW, *args)


class AccessRoundTwo:
    """Issue 47: a grant changes no other user's access, a read grant writes nothing, term statistics routes, bad
    input to `access`, take-over and refusals under document-level security."""

    async def test_a_grant_changes_no_other_users_access(self, granted):
        g = granted
        carol = f"carol-{g.key['ana']}"
        body = {"password": USER_PW, **({"roles": []} if g.engine == "elasticsearch" else {})}
        await g.raw(g.admin, "PUT", f"{SECURITY_PATHS[g.engine]['user']}{carol}", body)
        extra = ("--index-prefix", g.prefix, "--workspace-key", g.key["ana"])
        try:
            made = await asyncio.to_thread(
                cli, g.url, g.ca, ADMIN, ADMIN_PW, "access", "grant", *extra, "--user", carol, "--write"
            )
            assert made.exit_code == 0, made.output
            listed = await asyncio.to_thread(
                cli, g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix
            )
            assert listed.exit_code == 0, listed.output
            assert f"{g.key['ana']}\tread\treme-es-{g.prefix}-{g.key['ana']}\tuser {g.key['ana']}" in listed.output
            assert f"{g.key['ana']}\tread+write\treme-es-write.{g.prefix}-{g.key['ana']}\tuser {carol}" in listed.output
            doc = Scope(g.key["ana"]).stored_id("by-carol")
            params = {"routing": g.key["ana"], "refresh": "true"}
            with pytest.raises(AuthError) as err:  # ana's read grant still writes nothing
                await g.raw(g.creds["ana"], "PUT", f"/{g.prefix}-files/_doc/{doc}", {"workspace": g.key["ana"]}, params)
            assert err.value.status == 403
            creds = ClientSettings([g.url], username=carol, password=USER_PW, ca_certs=g.ca, max_retries=0)
            done = await g.raw(creds, "PUT", f"/{g.prefix}-files/_doc/{doc}", {"workspace": g.key["ana"]}, params)
            assert done["result"] == "created"
            await g.raw(g.admin, "DELETE", f"/{g.prefix}-files/_doc/{doc}", params=params)
            # granting ana read again leaves carol's write level as it was
            again = await asyncio.to_thread(
                cli, g.url, g.ca, ADMIN, ADMIN_PW, "access", "grant", *extra, "--user", g.key["ana"]
            )
            assert again.exit_code == 0, again.output
            rows = await asyncio.to_thread(
                cli, g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix, "--json"
            )
            levels = {(r["workspace"], r["write"]): r["users"] for r in json.loads(rows.output)}
            assert levels[(g.key["ana"], True)] == [carol] and levels[(g.key["ana"], False)] == [g.key["ana"]]
        finally:
            gone = await asyncio.to_thread(
                cli, g.url, g.ca, ADMIN, ADMIN_PW, "access", "revoke", *extra, "--user", carol
            )
            await g.raw(g.admin, "DELETE", f"{SECURITY_PATHS[g.engine]['user']}{carol}")
        assert gone.exit_code == 0, gone.output

    async def test_a_read_grant_writes_nothing_and_opens_on_the_admins_pipeline(self, granted):
        g = granted
        ana = g.creds["ana"]
        refused = [
            ("PUT", f"/_search/pipeline/{g.prefix}-mine", {"phase_results_processors": []}),
            ("PUT", f"/_ingest/pipeline/{g.prefix}-mine", {"processors": []}),
            ("PUT", f"/_index_template/{g.prefix}-mine", {"index_patterns": [f"{g.prefix}-x*"]}),
            ("PUT", f"/{g.prefix}-chunks/_settings", {"index": {"refresh_interval": "7s"}}),
            ("PUT", f"/{g.prefix}-files/_doc/x", {"workspace": g.key["ana"]}),
        ]
        for method, path, body in refused:
            if "_search/pipeline" in path and g.engine == "elasticsearch":
                continue  # Elasticsearch has no search pipelines
            with pytest.raises(AuthError) as err:
                await g.raw(ana, method, path, body, {"routing": g.key["ana"]} if "_doc" in path else None)
            assert err.value.status == 403, path
        options = IndexOptions(dims=DIMS if g.knn else None)
        # fusion None: the server's own (a search pipeline on OpenSearch), put by the admin's store
        admins = await open_store(g.admin, g.prefix, g.engine, options, create=False, fusion=None)
        await admins.close()
        store = await open_store(ana, g.prefix, g.engine, options, create=False, workspace=g.key["ana"], fusion=None)
        try:  # opens, puts nothing, and searches through the admin's pipeline where the engine has one
            if g.engine == "opensearch" and g.knn:
                assert store.native_pipeline_wanted() and store.indices.native_hybrid()
                found = await g.raw(g.admin, "GET", f"/_search/pipeline/{store.pipeline_name()}")
                assert list(found) == [store.pipeline_name()]
            assert len(await store.keyword_search("heron", 5)) == 1
        finally:
            await store.close()

    async def test_term_vectors_are_refused_and_suggesters_are_named(self, granted):
        g = granted
        ana, bob = g.creds["ana"], g.key["bob"]
        tv = {"doc": {"text": f"heron {bob}", "workspace": bob}, "term_statistics": True}
        for path in (f"/{g.prefix}-chunks/_termvectors", f"/{g.prefix}-chunks/_mtermvectors"):
            body = tv if path.endswith("_termvectors") else {"docs": [{"_index": f"{g.prefix}-chunks", **tv}]}
            with pytest.raises(AuthError) as err:
                await g.raw(ana, "POST", path, body)
            assert err.value.status == 403, path
        # a term suggester: part of search, not a separate action. Elasticsearch refuses suggesters under
        # document-level security; OpenSearch answers from the whole shard's terms (docs/GUARANTEES.md names it,
        # and strict workspaces close it)
        term = {"text": "bobb", "term": {"field": "text", "suggest_mode": "always"}}
        phrase = {"text": "secret of bobb", "phrase": {"field": "text"}}
        for kind, body in (("term", term), ("phrase", phrase)):
            suggest = {"size": 0, "suggest": {"s": body}}
            if g.engine == "elasticsearch":
                with pytest.raises(RequestFailed) as refused:
                    await g.raw(ana, "POST", f"/{g.prefix}-chunks/_search", suggest)
                assert refused.value.status == 400 and "Suggest isn't supported" in str(refused.value), kind
            else:
                found = await g.raw(ana, "POST", f"/{g.prefix}-chunks/_search", suggest)
                options = [o["text"] for o in found["suggest"]["s"][0]["options"]]
                assert [o.split()[-1] for o in options[:1]] == ["bob"], (kind, options)  # phrase: "secret bob"
        # a write grant learns whether a guessed id exists in another workspace: `_create` answers 409 (named in
        # docs/GUARANTEES.md; a set per writer closes it)
        index, id_ = g.ids[g.key["ana"]][0]
        with pytest.raises(RequestFailed) as exists:
            body = {"workspace": g.key["ana"]}
            await g.raw(
                g.creds["bob"], "PUT", f"/{index}/_create/{quote(id_, safe='')}", body, {"routing": g.key["ana"]}
            )
        assert exists.value.status == 409

    def test_bad_input_to_access_is_refused_with_what_to_do(self, granted):
        g = granted
        base = ("access", "grant", "--index-prefix", g.prefix)
        cases = [
            ((*base, "--workspace-key", "nobody-x", "--user", g.key["ana"]), "workspace nobody-x is not recorded"),
            (("access", "grant", "--index-prefix", f"{g.prefix}-none", "--workspace-key", g.key["ana"], "--user",
              g.key["ana"]), f"index set {g.prefix}-none does not exist on this cluster"),
            ((*base, "--workspace-key", g.key["ana"], "--user", "no-such-user"), "user no-such-user is not known"),
            (("access", "revoke", "--index-prefix", g.prefix, "--workspace-key", g.key["ana"], "--user", "zed"),
             f"zed holds no grant of workspace {g.key['ana']}"),
        ]  # fmt: skip
        for args, said in cases:
            result = cli(g.url, g.ca, ADMIN, ADMIN_PW, *args)
            assert result.exit_code == 2, result.output
            assert said in result.output and "othing was" in result.output, result.output
        listed = cli(g.url, g.ca, ADMIN, ADMIN_PW, "access", "list", "--index-prefix", g.prefix, "--json")
        assert sorted(r["role"] for r in json.loads(listed.output)) == [
            f"reme-es-{g.prefix}-{g.key['ana']}",
            f"reme-es-write.{g.prefix}-{g.key['bob']}",
        ]

    def test_a_read_grantees_sync_says_the_grant_is_read_only(self, granted, tmp_path):
        g = granted
        (tmp_path / "digest").mkdir()
        (tmp_path / "digest" / "x.md").write_text("# x\n\nheron\n")
        args = ("sync", str(tmp_path), "--index-prefix", g.prefix, "--workspace-key", g.key["ana"])
        result = cli(g.url, g.ca, g.key["ana"], USER_PW, *args)
        assert result.exit_code == 1, result.output
        assert result.output.splitlines()[-1].startswith(
            f"error: {g.key['ana']} has read-only access to workspace {g.key['ana']} of index set {g.prefix}: it may "
            "search it, not write it"
        ), result.output
        assert "BulkError" not in result.output and "Traceback" not in result.output

    async def test_a_read_grantees_reme_start_says_the_grant_is_read_only(self, granted, tmp_path):
        pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")
        from tests.integration.test_reme import app_config, make_app, write_workspace

        g = granted
        write_workspace(tmp_path)
        cfg = app_config(tmp_path, g.engine, g.url, g.prefix)
        cfg["components"]["as_embedding"]["default"]["dimensions"] = DIMS
        cfg["components"]["file_store"]["default"].update(
            workspace_key=g.key["ana"], username=g.key["ana"], password=USER_PW, ca_certs=g.ca
        )
        app = make_app(cfg)
        try:
            with pytest.raises(AuthError) as err:
                await app.start()
        finally:
            await app.close()
        assert str(err.value).startswith(
            f"{g.key['ana']} has read-only access to workspace {g.key['ana']} of index set {g.prefix}: it may search "
            "it, not write it"
        ), err.value

    def test_take_over_of_a_workspace_the_grant_cannot_see_needs_yes(self, granted, tmp_path):
        g = granted  # bob (write grant) cannot read ana's registry record
        (tmp_path / "digest").mkdir()
        args = ("sync", str(tmp_path), "--index-prefix", g.prefix, "--workspace-key", g.key["ana"], "--take-over")
        result = cli(g.url, g.ca, g.key["bob"], USER_PW, *args)
        assert result.exit_code == 2, result.output
        assert "cannot see who holds this workspace" in result.output and "None" not in result.output
        assert "--take-over --yes" in result.output
        plain = cli(g.url, g.ca, g.key["bob"], USER_PW, *args[:-1])  # without --take-over: refused the same way
        assert plain.exit_code == 2 and "cannot see who holds this workspace" in plain.output, plain.output

    async def test_take_over_with_yes_claims_a_workspace_the_grant_cannot_see(self, granted, tmp_path):
        g = granted
        key = f"carl-{g.key['ana']}"  # a third workspace, recorded by the admin only
        store = await open_store(g.admin, g.prefix, g.engine, create=False, workspace=key)
        try:
            await store.claim("/elsewhere/carl")
        finally:
            await store.close()
        (tmp_path / "digest").mkdir()
        args = ("sync", str(tmp_path), "--index-prefix", g.prefix, "--workspace-key", key, "--take-over", "--yes")
        try:
            result = await asyncio.to_thread(cli, g.url, g.ca, g.key["bob"], USER_PW, *args)
            assert result.exit_code == 0, result.output
            assert "None" not in result.output
            params = {"routing": key}
            record = await g.raw(g.admin, "GET", f"/{g.prefix}-workspaces/_doc/{key}", params=params)
            assert record["_source"]["folder"] == str(tmp_path.resolve())
        finally:
            await g.raw(
                g.admin, "DELETE", f"/{g.prefix}-workspaces/_doc/{key}", params={"routing": key, "refresh": "true"}
            )

    def test_search_with_a_key_alone_names_no_folder(self, granted):
        g = granted
        args = ("search", "heron", "--index-prefix", g.prefix, "--mode", "keyword", "--workspace-key", "nobody-x")
        result = cli(g.url, g.ca, ADMIN, ADMIN_PW, *args)
        assert result.exit_code == 2, result.output
        assert "workspace nobody-x has nothing in index set" in result.output and "(folder" not in result.output

    async def test_a_refused_update_is_not_retried(self, granted):
        g = granted
        calls = []
        store = await open_store(g.creds["bob"], g.prefix, g.engine, create=False, workspace=g.key["bob"])
        try:
            transport = store.port.transport

            class Counting(type(transport.clock)):  # type: ignore[misc]
                async def sleep(self, seconds: float) -> None:
                    calls.append(seconds)

            transport.clock = Counting()
            index, id_ = g.ids[g.key["bob"]][0]
            outcome = await store.port.unscoped().bulk(
                [Action("update", f"{g.prefix}-chunks", id_, {"x": 1}, routing=g.key["bob"])]
            )
            with pytest.raises(BulkError) as err:
                outcome.raise_for_failures()
            said = str(await store.explained(err.value))
        finally:
            await store.close()
        # OpenSearch: a 500 `security_exception` (DLS refuses updates); Elasticsearch: 403, the grant names no update
        status = 500 if g.engine == "opensearch" else 403
        assert [(f.status, f.type) for f in outcome.failures] == [(status, "security_exception")], outcome.failures
        assert calls == []  # no backoff: tried once
        assert said.startswith(
            f"{g.key['bob']} has read+write access to workspace {g.key['bob']} of index set {g.prefix}, and the "
            "cluster refused this write for good"
        ), said  # one line naming the grant

    async def test_a_strict_workspace_gives_nothing_of_another_workspace_to_term_statistics(self, granted):
        """The side channels search keeps (suggesters, BM25's document counts, significant_text's background) read
        the shard's terms: a strict workspace (`--strict`: alone in `<set>-only-<key>`) has no other workspace's."""
        g = granted
        ana = g.key["ana"]
        own = strict_set(g.prefix, ana)
        options = IndexOptions(dims=DIMS if g.knn else None)
        store = await open_store(g.admin, own, g.engine, options, workspace=ana)
        try:
            await store.claim(str(g.folders["ana"]))
            c = chunk("notes/day.md", f"heron secret of ana {ana}", vector=unit_vector(1) if g.knn else None)
            assert (await store.upsert([file_with("notes/day.md", [c])])).failures == []
        finally:
            await store.close()
        args = ("access", "grant", "--index-prefix", g.prefix, "--workspace-key", ana, "--strict")
        try:
            made = await as_admin(g, *args, "--user", ana)
            assert made.exit_code == 0, made.output
            assert f"reme-es-{own}-{ana}" in made.output
            creds = g.creds["ana"]
            await g.raw(g.admin, "POST", f"/{own}-*/_refresh")
            suggest = {
                "size": 0,
                "suggest": {"s": {"text": "bobb", "term": {"field": "text", "suggest_mode": "always"}}},
            }
            if g.engine == "opensearch":  # Elasticsearch refuses suggesters under document-level security anyway
                found = await g.raw(creds, "POST", f"/{own}-chunks/_search", suggest)
                assert found["suggest"]["s"][0]["options"] == []
            explained = await g.raw(
                creds, "POST", f"/{own}-chunks/_search", {"explain": True, "query": {"match": {"text": "heron"}}}
            )
            counts = re.findall(r'"value": (\d+), "description": "(?:n|N), ', json.dumps(explained))
            assert counts == ["1", "1"], counts  # the documents holding "heron", and with `text`: ana's one chunk
            sig = {"size": 0, "aggs": {"s": {"significant_text": {"field": "text", "min_doc_count": 1}}}}
            agg = (await g.raw(creds, "POST", f"/{own}-chunks/_search", sig))["aggregations"]["s"]
            assert agg["bg_count"] == 1
            # the CLI finds ana's strict workspace with --strict, as her
            base = ("search", "heron", "--index-prefix", g.prefix, "--workspace-key", ana, "--mode", "keyword")
            hits = await asyncio.to_thread(cli, g.url, g.ca, ana, USER_PW, *base, "--strict", "--json")
            assert hits.exit_code == 0, hits.output
            assert [h["path"] for h in json.loads(hits.output)["hits"]] == ["notes/day.md"]
        finally:
            await as_admin(g, "access", "revoke", *args[2:])
            made_indices = await g.raw(g.admin, "GET", f"/{own}-*/_alias")
            await g.raw(g.admin, "DELETE", f"/{','.join(sorted(made_indices))}")

    async def test_a_grant_splits_a_role_from_before_the_levels_keeping_its_writers(self, granted):
        """A role of one level for both (`reme-es-<set>-<ws>` granting writes, as grants were made before): the next
        grant on the workspace moves its users to the write level, so granting read to another user takes no one's
        write away."""
        g = granted
        target = Workspace(g.prefix, g.key["bob"])
        paths = SECURITY_PATHS[g.engine]
        if g.engine == "opensearch":
            role, mapping = opensearch_role(target, True), {"users": ["dan"], "backend_roles": [], "hosts": []}
        else:
            role, mapping = elasticsearch_role(target, True), elasticsearch_role_mapping(target.role, ["dan"], [])
        await g.raw(g.admin, "PUT", f"{paths['role']}{target.role}", role)
        await g.raw(g.admin, "PUT", f"{paths['mapping']}{target.role}", mapping)
        extra = ("--index-prefix", g.prefix, "--workspace-key", g.key["bob"])
        made = await as_admin(g, "access", "grant", *extra, "--user", "erin", "--create-mapping-only")
        assert made.exit_code == 0, made.output
        listed = await as_admin(g, "access", "list", "--index-prefix", g.prefix, "--json")
        levels = {(r["workspace"], r["write"]): sorted(r["users"]) for r in json.loads(listed.output)}
        assert levels[(g.key["bob"], True)] == sorted([g.key["bob"], "dan"])
        assert levels[(g.key["bob"], False)] == ["erin"]
        gone = await as_admin(g, "access", "revoke", *extra, "--user", "erin", "--user", "dan")
        assert gone.exit_code == 0, gone.output
        assert gone.output.splitlines() == [
            f"left: {g.key['bob']}\tread+write\treme-es-write.{g.prefix}-{g.key['bob']}\tuser {g.key['bob']}"
        ]
