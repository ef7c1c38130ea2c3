"""`reme-es ui` in a real browser (Debian's Chromium through Playwright) against a real node, with two workspaces
synced by the CLI: the overview's counts, a search explained in the same order as `reme-es search`, a file page, the
typed confirmation of forgetting, the token on writes, and the loopback-only bind."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.store.connect import open_store
from tests.integration.cli_support import EXAMPLE, Cli, _drop
from tests.ui.conftest import TOKEN, UiRun
from tests.ui.memorie_docs import TEXTS, bulk, memorie_index, memory, relation

QUERY = "hybrid search with local embeddings"


def off_loop(fn, *args):
    """`fn(*args)` in a thread of its own: Playwright's sync API keeps an event loop running on the main thread, and
    the CLI and the store checks start theirs with `asyncio.run`."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


@pytest.fixture(scope="module")
def synced(node_url, tmp_path_factory):
    """Two copies of examples/workspace synced by the CLI into one set, with local vectors; the set dropped after."""
    root = tmp_path_factory.mktemp("ui")
    prefix = f"t-ui-{uuid.uuid4().hex[:8]}"
    clis = []
    for name in ("alpha", "beta"):
        folder = root / name
        shutil.copytree(EXAMPLE, folder)
        cli = Cli(node_url, prefix, folder, root / "home")
        result = off_loop(cli, "sync", str(folder), "--embedding", "local")
        assert result.exit_code == 0, result.output
        clis.append(cli)
    yield prefix, clis
    off_loop(asyncio.run, _drop(node_url, prefix))


@pytest.fixture(scope="module")
def ui(node_url, synced, tmp_path_factory):
    prefix, clis = synced
    run = UiRun(["--hosts", node_url, "--index-prefix", prefix, "--allow-writes"], clis[0].home)
    yield run
    run.stop()


@pytest.fixture
def page(chromium, ui):
    """A page of a new browser context that opened the run's link (so it holds the token cookie)."""
    context = chromium.new_context()
    page = context.new_page()
    page.goto(ui.url)
    yield page
    context.close()


def _counts(url: str, prefix: str, workspace: str) -> dict:
    async def read():
        store = await open_store(ClientSettings([url]), prefix, create=False, workspace=workspace)
        try:
            return await store.inspect.health_counts()
        finally:
            await store.close()

    return off_loop(asyncio.run, read())


def test_the_overview_lists_each_workspace_with_its_counts(page, synced, node_url):
    prefix, clis = synced
    rows = page.locator("#workspaces tr[data-ws]")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.ws)")) == sorted(c.key for c in clis)
    for cli in clis:
        counts = _counts(node_url, prefix, cli.key)
        row = page.locator(f'#workspaces tr[data-ws="{cli.key}"]')
        assert (
            int(row.locator("td.files").inner_text()) == counts["files"] == 5
        )  # daily and digest Markdown: the default dirs and suffix
        assert int(row.locator("td.chunks").inner_text()) == counts["chunks"] > 0


def test_a_search_shows_the_hits_of_reme_es_search_in_its_order_each_with_its_stages(page, synced, ui):
    _, clis = synced
    cli = clis[0]
    result = off_loop(cli, "search", QUERY, "--json", "--limit", "5", "--no-links")
    assert result.exit_code == 0, result.output
    expected = [f"{h['path']}:{h['start_line']}-{h['end_line']}" for h in json.loads(result.stdout)["hits"]]
    assert len(expected) == 5
    page.goto(f"{ui.base}/w/{cli.key}/search?q={urllib.parse.quote(QUERY)}&limit=5")
    shown = [t.split(" ", 1)[1].split("\n")[0].strip() for t in page.locator(".hit h3").all_inner_texts()]
    assert [s.rsplit(" score", 1)[0].strip() for s in shown] == expected
    for hit in page.locator(".hit").all():
        stages = hit.locator("table.stages th").all_inner_texts()
        assert stages[:2] == ["bm25", "k-NN"] and "fusion" in stages and stages[-1] == "cut"
    page.locator("#requests summary").click()
    assert "_msearch" in page.locator("#requests").inner_text()


def _searches_counted(base: str) -> float:
    """The count of `search_memory` operations in the run's /metrics (Prometheus text)."""
    text = urllib.request.urlopen(f"{base}/metrics", timeout=30).read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("gen_ai_client_operation_duration_seconds_count{")
        and 'gen_ai_operation_name="search_memory"' in line
    )


def test_metrics_on_the_ui_count_each_search_its_pages_ran(synced, ui):
    _, clis = synced
    before = _searches_counted(ui.base)
    for _ in range(2):
        url = f"{ui.base}/w/{clis[0].key}/search?q={urllib.parse.quote(QUERY)}&limit=3"
        urllib.request.urlopen(url, timeout=60).read()
    assert _searches_counted(ui.base) - before == 2


def test_a_file_page_shows_its_chunks_front_matter_and_links(page, synced, ui):
    _, clis = synced
    page.goto(f"{ui.base}/w/{clis[0].key}/file?path=digest%2Fproject-atlas.md")
    assert page.locator("#chunks tr").count() - 1 >= 1
    assert "Project Atlas" in page.locator("#chunks").inner_text()
    outlinks = page.locator("#outlinks").inner_text()
    assert "digest/search.md" in outlinks and "digest/indexing.md" in outlinks
    assert page.locator("#graph svg circle").count() >= 3


def test_a_write_without_the_token_is_refused(ui, synced):
    _, clis = synced
    body = urllib.parse.urlencode({"confirm": clis[1].key, "csrf": "x"}).encode()
    request = urllib.request.Request(f"{ui.base}/w/{clis[1].key}/forget", data=body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert b"token" in refused.value.read()


def test_forgetting_a_workspace_asks_for_its_name_then_it_is_gone_from_the_node(page, synced, ui, node_url):
    prefix, clis = synced
    gone = clis[1].key
    page.goto(f"{ui.base}/w/{gone}")
    page.locator("#forget-workspace").click()
    page.fill("#confirm", "not-the-name")
    page.locator("#do-forget").click()
    assert "type" in page.locator("#error").inner_text()
    assert _counts(node_url, prefix, gone)["files"] == 5  # a wrong confirmation forgets nothing
    page.fill("#confirm", gone)
    with page.expect_navigation(url=f"{ui.base}/", timeout=180_000):  # the expunge waits for retention leases
        page.locator("#do-forget").click(no_wait_after=True)
    assert page.locator(f'#workspaces tr[data-ws="{gone}"]').count() == 0
    assert page.locator(f'#workspaces tr[data-ws="{clis[0].key}"]').count() == 1
    assert _counts(node_url, prefix, gone) == {"files": 0, "chunks": 0, "vectors": 0, "links": 0}


def test_a_non_loopback_bind_without_allow_remote_exits_with_one_line(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "reme_es.cli", "ui", "--bind", "0.0.0.0", "--token", TOKEN],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --bind 0.0.0.0 is not a loopback address")


def test_grants_and_snapshots_are_listed_read_only_with_what_the_cluster_lacks_said(page, ui):
    page.goto(f"{ui.base}/access?repo=no-such-repo")
    assert "security" in page.locator("#grants-error").inner_text()  # the test node has no security plugin
    assert "no-such-repo" in page.locator("#snapshots-error").inner_text()
    assert page.locator("form[method=post]").count() == 0


def test_search_explain_shows_the_hits_of_search_in_its_order_with_every_stage(synced):
    _, clis = synced
    cli = clis[0]
    plain = json.loads(off_loop(cli, "search", QUERY, "--json", "--limit", "4", "--no-links").stdout)
    explained = json.loads(off_loop(cli, "search", QUERY, "--json", "--explain", "--limit", "4", "--no-links").stdout)
    order = [(h["path"], h["start_line"]) for h in plain["hits"]]
    assert len(order) == 4 and [(h["path"], h["start_line"]) for h in explained["hits"]] == order
    breakdown = explained["explain"]
    assert [(h["path"], h["start_line"]) for h in breakdown["ranked"]] == order and breakdown["consistent"] is True
    names = [s["name"] for s in breakdown["stages"]]
    assert names[:2] == ["bm25", "k-NN"] and "fusion" in names and names[-1] == "cut"
    assert all(len(h["stages"]) == len(names) for h in breakdown["ranked"])
    text = off_loop(cli, "search", QUERY, "--explain", "--limit", "4", "--no-links").stdout
    assert text.count("\n  moved by: ") == 4 and text.startswith("stages: bm25 (")


def _http(method: str, url: str, body: str | None = None) -> None:
    data = body.encode() if body is not None else None
    headers = {"Content-Type": "application/x-ndjson" if url.endswith("_bulk?refresh=true") else "application/json"}
    urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=30).read()


def test_the_overview_counts_the_memorie_tenants_of_the_prefix(page, synced, ui, node_url):
    prefix, _ = synced
    docs = {"memories": ["ana", "ana", "ben"], "vectors": ["ben", "ana", "ben"], "relations": ["ana"]}
    # as Memorie writes them: the tenant per memory, a relation's source's, a vector entry's only in its metadata
    # (memorie/src/metadata.ts: a meta_kv term "tenantId" U+001F and the value as JSON, beside the entry's other keys)
    field = {"memories": "tenant_id", "vectors": "meta_kv", "relations": "from_tenant_id"}

    def value(kind: str, tenant: str):
        return ['namespace\x1f"work"', f"tenantId\x1f{json.dumps(tenant)}"] if kind == "vectors" else tenant

    try:
        for kind, tenants in docs.items():
            index = f"{node_url}/{prefix}-memorie-{kind}"
            _http("PUT", index, json.dumps({"mappings": {"properties": {field[kind]: {"type": "keyword"}}}}))
            lines = "".join(
                json.dumps({"index": {}}) + "\n" + json.dumps({field[kind]: value(kind, t)}) + "\n" for t in tenants
            )
            _http("POST", f"{index}/_bulk?refresh=true", lines)
        page.goto(ui.base + "/")
        rows = page.locator("#tenants tr[data-tenant]")
        assert rows.evaluate_all("rs => rs.map(r => r.dataset.tenant)") == ["ana", "ben"]
        cells = [r.locator("td.n").all_inner_texts() for r in rows.all()]
        assert cells == [["2", "1", "1"], ["1", "2", "0"]]  # memories, vectors, relations
    finally:
        for kind in docs:
            try:
                _http("DELETE", f"{node_url}/{prefix}-memorie-{kind}")
            except urllib.error.HTTPError:
                pass


def test_the_overview_names_the_other_index_sets_of_the_cluster(page, synced, ui, node_url):
    prefix, _ = synced
    other = f"{prefix}-other"
    _http("PUT", f"{node_url}/{other}-chunks-1", json.dumps({}))
    try:
        page.goto(ui.base + "/")
        listed = page.locator("#other-sets li").all_inner_texts()
        assert other in listed and prefix not in listed
    finally:
        _http("DELETE", f"{node_url}/{other}-chunks-1")


def test_a_memorie_tenant_page_shows_its_memories_and_relations_and_searches_them(page, synced, ui, node_url):
    prefix, _ = synced
    tenants = ("ana", "ben")  # the same texts in both: the page must show only the opened tenant's
    try:
        memories = memorie_index(node_url, prefix, "memories")
        relations = memorie_index(node_url, prefix, "relations")
        bulk(memories, [memory(t, n, text) for t in tenants for n, text in enumerate(TEXTS)])
        bulk(relations, [relation(t, 0, 2) for t in tenants])
        page.goto(ui.base + "/")
        page.locator('#tenants tr[data-tenant="ana"] a').click()
        assert page.url == f"{ui.base}/m/ana"
        shown = page.locator("#memories tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")
        assert shown == ["m-ana-2", "m-ana-1", "m-ana-0"]  # newest first
        assert page.locator("#memories-count").inner_text() == "3 memories"
        assert TEXTS[0] in page.locator('#memories tr[data-id="m-ana-0"]').inner_text()
        assert page.locator("#relations tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)") == ["r-ana"]
        cells = page.locator('#relations tr[data-id="r-ana"] td').all_inner_texts()
        assert cells[:3] == ["m-ana-0", "related_to", "m-ana-2"]
        page.fill("#search input[name=q]", "green tea noon")
        page.locator("#search button").click()
        hits = page.locator("#hits tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")
        assert hits == [
            "m-ana-0",
            "m-ana-2",
        ]  # two terms matched, then one; ben's memories of the same texts not at all
        scores = [float(t) for t in page.locator("#hits tr[data-id] td.score").all_inner_texts()]
        assert scores[0] > scores[1] > 0
        page.locator("#requests summary").click()
        sent = page.locator("#requests").inner_text()
        assert "_msearch" in sent and '"tenant_id":"ana"' in sent and "took" in sent
        page.goto(f"{ui.base}/m/ben?q={urllib.parse.quote('deploy Fridays')}")
        assert page.locator("#hits tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)") == ["m-ben-1"]
    finally:
        for kind in ("memories", "relations"):
            try:
                _http("DELETE", f"{node_url}/{prefix}-memorie-{kind}")
            except urllib.error.HTTPError:
                pass
