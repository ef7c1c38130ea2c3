"""Each default is written once (issue 41): the known literals are looked for in every default position of
`reme_es/` (parameter defaults, class fields and `Field(default=...)`, module constants, click's `default=`,
`.get("name", default)` and config dicts), and a second definition fails the test."""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "reme_es"


@dataclass(frozen=True)
class Default:
    """One default: the names it goes by, its value and the one file that may write it (a `.json`: none in Python)."""

    what: str
    names: frozenset[str]
    value: object
    home: str


DEFAULTS = (
    Default("chunk size", frozenset({"chunk_chars", "max_chars"}), 1500, "core/options.py"),
    Default("deferred refresh", frozenset({"refresh_after", "REFRESH_AFTER_S"}), 1.0, "engine_settings.json"),
    Default("request try timeout", frozenset({"timeout", "try_timeout"}), 30, "engine_settings.json"),
    Default("managed node heap", frozenset({"heap", "DEFAULT_HEAP"}), "512m", "server/flavours.py"),
    Default("managed node start timeout", frozenset({"timeout", "START_TIMEOUT_S"}), 180, "server/node.py"),
    Default("embedding batch", frozenset({"batch_size", "BATCH_SIZE"}), 64, "embeddings/__init__.py"),
    Default("embedding max length", frozenset({"max_length", "MAX_LENGTH"}), 256, "embeddings/__init__.py"),
    Default("embedding threads", frozenset({"threads", "THREADS"}), 2, "embeddings/__init__.py"),
    Default("engine", frozenset({"engine", "DEFAULT_ENGINE"}), "auto", "core/engine_settings.py"),
    Default("SigV4 service", frozenset({"aws_service", "DEFAULT_AWS_SERVICE"}), "es", "core/options.py"),
    Default("watch quiet time", frozenset({"quiet_ms", "QUIET_MS"}), 300, "sync/watch.py"),
    Default("watch longest wait", frozenset({"max_wait_ms", "MAX_WAIT_MS"}), 3000, "sync/watch.py"),
    Default("files deleted per batch", frozenset({"DELETE_BATCH"}), 500, "sync/write.py"),
    Default("backfill page", frozenset({"batch"}), 500, "store/vectors.py"),
    # Per-call defaults the options model does not hold yet: the door (or the part a namespace of it binds) writes them.
    Default(
        "candidates per result",
        frozenset({"candidate_multiplier", "multiplier", "CANDIDATE_MULTIPLIER"}),
        5,
        "store/__init__.py",
    ),
    Default("links expanded per direction", frozenset({"max_per_direction", "per_direction"}), 5, "store/links.py"),
    Default("traversal depth", frozenset({"depth"}), 2, "store/links.py"),
    Default("traversal size", frozenset({"max_nodes"}), 1000, "store/links.py"),
    Default("optimize threshold", frozenset({"deleted_ratio"}), 0.1, "store/admin.py"),
    # ReMe's search step: its kwargs default (ReMe's default.yaml value); reme/plugin.py no longer repeats it.
    Default("step links per direction", frozenset({"max_links_per_direction"}), 10, "reme/search_step.py"),
)

# Being moved: repeated defaults in modules another change is rewriting now (issue 41). Delete an entry once its
# module no longer writes the default; with this set empty the test checks every module. The test fails on an
# entry that is no longer found, so the set only shrinks.
BEING_MOVED: set[tuple[str, str]] = set()


def _literal(node: ast.AST | None) -> object:
    """The value of a literal (a number, a string, a negated number), else a marker no default equals."""
    try:
        return ast.literal_eval(node) if node is not None else _NOTHING
    except ValueError:
        return _NOTHING


_NOTHING = object()


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _assigned(node: ast.AST) -> ast.AST | None:
    """The default an assignment gives: its value, or the `default=` of a `Field(...)`."""
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in ("Field", "field"):
        return _keyword(value, "default")
    return value


def definitions(source: str) -> list[tuple[str, object, int]]:
    """(name, default value, line) of every default position in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            found += [(a.arg, _literal(d), d.lineno) for a, d in pairs]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, _literal(_assigned(node)), node.lineno))
        elif isinstance(node, ast.Assign):
            found += [(t.id, _literal(_assigned(node)), node.lineno) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.Call):
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
            if flags and _keyword(node, "default") is not None:  # click.option("--name", default=...)
                found.append((flags[0][2:].replace("-", "_"), _literal(_keyword(node, "default")), node.lineno))
            getter = getattr(node.func, "attr", "") == "get" and len(node.args) == 2
            if getter and isinstance(node.args[0], ast.Constant):  # kwargs.get("name", 5)
                found.append((str(node.args[0].value), _literal(node.args[1]), node.lineno))
        elif isinstance(node, ast.Dict):
            found += [
                (k.value, _literal(v), v.lineno)
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return found


def _same(value: object, default: object) -> bool:
    if isinstance(value, bool) or isinstance(default, bool):
        return False
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and value == default
    return value == default


def written(package: Path = PACKAGE) -> dict[str, list[tuple[str, int]]]:
    """Where each known default is written: what -> [(module relative to the package, line)]."""
    out: dict[str, list[tuple[str, int]]] = {d.what: [] for d in DEFAULTS}
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        for name, value, line in definitions(path.read_text(encoding="utf-8")):
            for d in DEFAULTS:
                if name in d.names and _same(value, d.value):
                    out[d.what].append((module, line))
    return out


@pytest.mark.parametrize("default", DEFAULTS, ids=lambda d: d.what)
def test_each_default_is_written_once(default):
    places = written()[default.what]
    elsewhere = [f"reme_es/{m}:{line}" for m, line in places if (m, default.what) not in BEING_MOVED]
    expected = [] if default.home.endswith(".json") else [default.home]
    assert [p.rsplit(":", 1)[0].removeprefix("reme_es/") for p in elsewhere] == expected, (
        f"{default.what} ({default.value!r}) must be written once, in reme_es/{default.home}; found at {elsewhere}: "
        "take the options object or require the argument instead"
    )


def test_the_modules_being_moved_still_write_their_default():
    places = written()
    gone = sorted(entry for entry in BEING_MOVED if entry[0] not in {m for m, _ in places[entry[1]]})
    assert gone == [], f"moved: delete these entries from BEING_MOVED, so the test checks those modules too: {gone}"


def test_the_scan_finds_every_kind_of_default_position():
    source = """
import click
def f(a, chunk_chars: int = 1500, *, heap="512m"): ...
class C:
    refresh_after: float = Field(default=1.0, ge=0)
    timeout: float = 30.0
DEFAULT_HEAP = "512m"
@click.option("--deleted-ratio", default=0.1)
def g(kwargs): return kwargs.get("candidate_multiplier", 5.0), {"max_links_per_direction": 10}
"""
    assert sorted((n, v) for n, v, _ in definitions(source)) == sorted(
        [
            ("chunk_chars", 1500),
            ("heap", "512m"),
            ("refresh_after", 1.0),
            ("timeout", 30.0),
            ("DEFAULT_HEAP", "512m"),
            ("deleted_ratio", 0.1),
            ("candidate_multiplier", 5.0),
            ("max_links_per_direction", 10),
        ]
    )


def test_the_refresh_after_is_the_shared_settings_one():
    from reme_es.core.options import SearchOptions

    shared = json.loads((PACKAGE / "engine_settings.json").read_text())["refresh"]["after_ms"]
    assert SearchOptions().refresh_after * 1000 == shared


def test_the_try_timeout_is_the_shared_settings_one():
    from reme_es.adapters.transport import ClientSettings

    shared = json.loads((PACKAGE / "engine_settings.json").read_text())["retry"]["request"]["try_timeout_s"]
    assert ClientSettings(hosts=[]).timeout == shared


def test_the_cli_states_the_defaults_it_leaves_to_the_store():
    from reme_es.cli.admin_commands import optimize
    from reme_es.cli.server_commands import server_start
    from reme_es.server.flavours import DEFAULT_HEAP
    from reme_es.store.admin import Admin

    ratio = inspect.signature(Admin.optimize).parameters["deleted_ratio"].default
    option = next(p for p in optimize.params if p.name == "deleted_ratio")
    assert f"store.admin.optimize's, {ratio})" in option.help  # and no default of its own (the scan above)
    assert next(p for p in server_start.params if p.name == "heap").default == DEFAULT_HEAP
