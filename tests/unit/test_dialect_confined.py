"""Engine knowledge only in the dialects (issue 51, docs/ARCHITECTURE.md "The dialect seam"): no query DSL key, no
answer layout, no REST path and no branch on an engine's name in the layers above them.

Python: `store/`, `reme/`, `cli/` and `sync/` speak in models, capabilities and the port's typed answers; the dialect
modules and the port (`reme_es/adapters/`) hold the rest. What is read is the code (the syntax tree): docstrings,
comments and messages may name `_msearch` or a key, and an engine's name may be shown, just not branched on.
TypeScript: `memorie/src` outside its dialect files branches on no engine name (the engine dialect objects of
`engine-dialect.ts` decide) and builds no request body (`dialect.ts`, `vector-dialect.ts`, `relation-dialect.ts`,
`engine-dialect.ts` do); outside its port (`port*.ts`, over `transport.ts` and `connection.ts`) it sends no request,
names no REST path and reads no answer's layout: the stores speak in the port's typed calls and hits.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import reme_es

PACKAGE = Path(reme_es.__file__).parent
ABOVE = ("store", "reme", "cli", "sync")
ENGINES = {"opensearch", "elasticsearch", "aoss"}
# keys of query DSL and of search answers: never a dict key, a subscript or a `.get` above the dialects
DSL_KEYS = {
    "_id", "_index", "_primary_term", "_routing", "_score", "_seq_no", "_source", "bool", "docvalue_fields", "exists",
    "function_score", "knn", "match", "match_all", "match_none", "more_like_this", "multi_match", "must", "must_not",
    "num_candidates", "query_vector", "random_score", "script", "script_score", "should", "stored_fields", "term",
    "terms", "track_total_hits",
}  # fmt: skip
# words an answer's layout shares with ordinary use (ReMe's context has a "query"): only a subscript of them counts
ANSWER_KEYS = {"hits", "query", "responses", "took", "aggregations", "total"}
REST = re.compile(
    r"/_(search|msearch|bulk|doc|mget|count|refresh|forcemerge|stats|mapping|settings|aliases?|cat|cluster|nodes"
    r"|snapshot|reindex|delete_by_query|update_by_query|analyze|ingest|search_pipeline|plugins|security|license"
    r"|xpack|field_caps|tasks|create|update|termvectors|explain|validate)\b"
)
ALLOWED: list[str] = []  # file:line of a known exception; empty, and to stay so


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _names_engine(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ENGINES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_engine(e) for e in node.elts)
    return False


def _key(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def engine_knowledge(source: str) -> list[tuple[int, str]]:
    """(line, what) of each DSL key, answer-layout read, REST path and engine-name branch in Python source."""
    tree, found = ast.parse(source), []
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found += [(k.lineno, f"DSL key {_key(k)!r}") for k in node.keys if k is not None and _key(k) in DSL_KEYS]
        elif isinstance(node, ast.Subscript) and _key(node.slice) in DSL_KEYS | ANSWER_KEYS:
            found.append((node.lineno, f"answer read [{_key(node.slice)!r}]"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if node.args and _key(node.args[0]) in DSL_KEYS:
                found.append((node.lineno, f"answer read .get({_key(node.args[0])!r})"))
        elif isinstance(node, ast.Compare) and any(_names_engine(n) for n in [node.left, *node.comparators]):
            found.append((node.lineno, "branch on an engine name"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if REST.search(node.value):
                found.append((node.lineno, f"REST path {REST.search(node.value).group(0)!r}"))  # type: ignore[union-attr]
    return sorted(found)


def test_no_engine_knowledge_above_the_python_dialects() -> None:
    found = []
    for layer in ABOVE:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for line, what in engine_knowledge(path.read_text()):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert [f for f in found if f.split(": ")[0] not in ALLOWED] == []
    assert ALLOWED == []


def test_the_checker_sees_each_kind_and_skips_prose() -> None:
    source = '''
"""Module docstring naming POST /_msearch and "bool"."""
def f(port, caps, answer):
    """Sends `/_search`."""
    body = {"query": {"bool": {"filter": []}}, "size": 3}
    port.request("POST", "/_msearch", body)
    if caps.engine == "opensearch":
        pass
    hits = answer["hits"]["hits"]
    src = hits[0].get("_source")
    log("no REST path in /tmp/_x; the engine is %s", caps.engine)  # comment: /_search
    return {"query": "text", "hits": hits}
'''
    assert engine_knowledge(source) == [
        (5, "DSL key 'bool'"),
        (6, "REST path '/_msearch'"),
        (7, "branch on an engine name"),
        (9, "answer read ['hits']"),
        (9, "answer read ['hits']"),
        (10, "answer read .get('_source')"),
    ]


# ---------------------------------------------------------------------------------------------------- TypeScript

MEMORIE = Path(__file__).resolve().parents[2] / "memorie" / "src"
# the dialect files: the engine dialect objects, the pure builders of bodies, clauses and mappings, the shared settings
TS_DIALECTS = {
    "engine-dialect.ts",
    "dialect.ts",
    "vector-dialect.ts",
    "relation-dialect.ts",
    "metadata.ts",
    "settings.ts",
}
# the port and the transport under it: the typed requests of the stores (`port.ts`: searches, documents and the
# calibration's; `port-indices.ts`, `port-upkeep.ts`, `port-snapshots.ts`), the connection that opens and sends them
# (engine detection, the cluster check, retries, error messages); the only files that name a REST path, send a request
# or read an answer's layout
TS_PORT = {
    "port.ts", "port-indices.ts", "port-upkeep.ts", "port-snapshots.ts",
    "transport.ts", "transport-errors.ts", "retry.ts", "connection.ts", "cluster.ts",
}  # fmt: skip
_TS_NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
TS_ENGINE_BRANCH = re.compile(
    r"""[=!]==?\s*["'](opensearch|elasticsearch)["']|["'](opensearch|elasticsearch)["']\s*[=!]==?"""
)
TS_DSL_KEYS = re.compile(
    r"\b(bool|must|must_not|should|exists|function_score|script_score|random_score|knn|match_all|match_none"
    r"|track_total_hits|_source|term|terms)\s*:|\bids\s*:\s*\{"
)
# a request sent in place (`conn.request(`, a `path:` given a literal, a literal REST path such as "/_analyze" or
# `/${index}/_search`) or an answer's layout read (`.hits`, `._source`, `._score`, `._id`, `.took`; not a spread
# `...hits`). Messages may name a REST path for the reader to run: they do not start with one.
TS_REQUEST = re.compile(
    r"""\.request\(|\bpath\s*:\s*[`"']|[`"']/(\$\{[^}]*\}/)*_[a-z]|(?<!\.)\.(hits|_source|_score|_id|took)\b"""
)


def _ts_code(path: Path) -> list[str]:
    return _TS_NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), path.read_text()).splitlines()


def _ts_found(pattern: re.Pattern[str], skip: set[str]) -> list[str]:
    found = []
    for path in sorted(MEMORIE.rglob("*.ts")):
        if path.name in skip:
            continue
        for n, line in enumerate(_ts_code(path), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(MEMORIE)}:{n}: {line.strip()}")
    return found


def test_no_engine_name_branch_in_memorie_outside_its_dialects() -> None:
    assert _ts_found(TS_ENGINE_BRANCH, TS_DIALECTS) == []


def test_no_request_body_is_built_in_memorie_outside_its_dialects() -> None:
    assert _ts_found(TS_DSL_KEYS, TS_DIALECTS | TS_PORT) == []


def test_no_rest_path_or_answer_read_in_memorie_outside_its_port() -> None:
    """The stores, indices.ts, forget.ts, restore.ts, bulk-load.ts and the k-NN modules speak in the port's calls."""
    assert _ts_found(TS_REQUEST, TS_DIALECTS | TS_PORT) == []


def test_the_typescript_checker_sees_each_request_kind_and_skips_messages() -> None:
    flagged = [
        "const r = await conn.request({ method: 'GET', what });",
        'await conn.write(alias, { method: "DELETE", path: `/${alias}/_doc/${id}`, what });',
        'const body = await analyze("/_analyze");',
        "const p = `/${q(index)}/_count`;",
        "const hits = r.body?.hits?.hits ?? [];",
        "for (const h of hits) ids.push(h._id);",
        "const meta = h._source?.metadata;",
        "const ms = answer.took;",
    ]
    passed = [
        "ids.push(...hits.map((h) => h.id));",
        "throw conn.error(`call forget again later, or POST /${alias}/_forcemerge?only_expunge_deletes=true`);",
        "const built = searchBody(query); send(built.body);",
        "function operationOf(method: string, path: string) {",
    ]
    assert [line for line in flagged if not TS_REQUEST.search(line)] == []
    assert [line for line in passed if TS_REQUEST.search(line)] == []
