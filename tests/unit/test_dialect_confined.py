"""Engine knowledge only in the dialects (issue 51, docs/ARCHITECTURE.md "The dialect seam"): no query DSL key, no
answer layout, no REST path and no branch on an engine's name in the layers above them.

Python: `store/`, `reme/`, `cli/` and `sync/` speak in models, capabilities and the port's typed answers; the dialect
modules and the port (`reme_es/adapters/`) hold the rest. What is read is the code (the syntax tree): docstrings,
comments and messages may name `_msearch` or a key, and an engine's name may be shown, just not branched on.
TypeScript: `memorie/src` outside its dialect files branches on no engine name (the engine dialect objects of
`engine-dialect.ts` decide) and builds no request body (`dialect.ts`, `vector-dialect.ts`, `engine-dialect.ts` do);
the k-NN width modules also name no REST path and read no answer (`port.ts` does).
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
# the dialect files: the engine dialect objects, the pure builders of bodies, clauses and mappings, the shared settings,
# and the typed requests under calibration (`port.ts`)
TS_DIALECTS = {
    "engine-dialect.ts",
    "dialect.ts",
    "vector-dialect.ts",
    "relation-dialect.ts",
    "metadata.ts",
    "settings.ts",
    "port.ts",
}
_TS_NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
TS_ENGINE_BRANCH = re.compile(
    r"""[=!]==?\s*["'](opensearch|elasticsearch)["']|["'](opensearch|elasticsearch)["']\s*[=!]==?"""
)
TS_DSL_KEYS = re.compile(
    r"\b(bool|must|must_not|should|exists|function_score|script_score|random_score|knn|match_all|match_none"
    r"|track_total_hits|_source|term|terms)\s*:|\bids\s*:\s*\{"
)
TS_REST_AND_ANSWERS = re.compile(r"/_(search|msearch|mapping|snapshot|count)\b|\.(hits|_source|_score|took)\b")
# no module outside the dialect files builds a body (issue 51); the calibration also names no REST path and reads no
# answer (`port.ts` does). The other modules' REST paths and answer reads are the next step (see docs/ARCHITECTURE.md).
TS_NO_REST = {"knn-calibration.ts", "knn-width.ts"}


def _ts_code(path: Path) -> list[str]:
    return _TS_NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), path.read_text()).splitlines()


def test_no_engine_name_branch_in_memorie_outside_its_dialects() -> None:
    found = []
    for path in sorted(MEMORIE.rglob("*.ts")):
        if path.name in TS_DIALECTS:
            continue
        for n, line in enumerate(_ts_code(path), 1):
            if TS_ENGINE_BRANCH.search(line):
                found.append(f"{path.relative_to(MEMORIE)}:{n}: {line.strip()}")
    assert found == []


def test_no_request_body_is_built_in_memorie_outside_its_dialects() -> None:
    found = []
    for path in sorted(MEMORIE.rglob("*.ts")):
        if path.name in TS_DIALECTS:
            continue
        patterns = (TS_DSL_KEYS, TS_REST_AND_ANSWERS) if path.name in TS_NO_REST else (TS_DSL_KEYS,)
        for n, line in enumerate(_ts_code(path), 1):
            if any(p.search(line) for p in patterns):
                found.append(f"{path.relative_to(MEMORIE)}:{n}: {line.strip()}")
    assert found == []
