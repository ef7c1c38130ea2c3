"""The one options model: every setting reme-es takes, each default written once (here, or in the engine settings
both languages share), read from one place by the CLI, the ReMe plugin, `MemoryStore` and the search parts.

Options come flat (`hosts`, `index_prefix`, `vector_weight`, ...) from `reme-es.yaml`, `REME_ES_<NAME>` variables,
command-line flags or ReMe's `file_store` keys, and are filed into four sections:

    connection   hosts, engine, credentials, TLS, timeout, AWS signing, the managed node's flavour
    index        the index set (`index_prefix`), the workspace in it, shards, replicas, HNSW, take-over
    search       hybrid mode, fusion, vector weights, feedback, collapse, proximity, date boost, deferred refresh
    sync         embedding, the file set and chunking of `reme-es sync`

Precedence: the CLI reads YAML < environment < flags; the ReMe plugin reads environment < ReMe's keys. Secrets
are `SecretStr`: never in `repr`, `model_dump()` or error messages. AWS credentials are never options: botocore
reads them. `Runtime` holds the process-wide variables (`REME_ES_HOME`, `REME_ES_DEBUG`, ...), read when asked.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError, field_validator

from .checks import (
    validate_collapse,
    validate_feedback,
    validate_fusion,
    validate_hosts,
    validate_hybrid,
    validate_prefix,
    validate_workspace_key,
)
from .engine_settings import (
    DEFAULT_ENGINE,
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    OPTIMIZE_AFTER_LOAD,
    REFRESH_AFTER_S,
    REQUEST_TRY_TIMEOUT_S,
)
from .errors import ConfigError

DEFAULT_AWS_SERVICE: Literal["es", "aoss"] = "es"  # SigV4 signing for Amazon OpenSearch Service ("aoss": Serverless)

CONFIG_NAME = "reme-es.yaml"
ENV_PREFIX = "REME_ES_"
SHARED_SET = "reme"  # the index set new workspaces go to when none is named
# What ReMe's file-store watcher (default.yaml's index_update_loop) indexes: Markdown in daily_dir and digest_dir.
# ReMe's start-up scan deletes from the file store anything outside this set, so sync defaults to it.
REME_DIRS = ("daily", "digest")
REME_SUFFIXES = ("md",)
_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _from_text(value: Any) -> Any:
    """A value as an environment variable spells it: `true`/`off`/... as a bool, digits as an int."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _WORDS and not word.isdigit():
            return _WORDS[word]
        if word.isdigit():
            return int(word)
    return value


def _checked(check, value):
    """Run a ConfigError check inside a pydantic validator (its message becomes the field's)."""
    try:
        return check(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# ------------------------------------------------------------------------------------------------------ sections
class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ConnectionOptions(_Section):
    """How to reach the cluster. No hosts: the managed local node (`reme-es server start`) of `flavour`."""

    hosts: list[str] = Field(default_factory=list)
    engine: str = DEFAULT_ENGINE  # auto or a registered dialect (reme_es.adapters.engines), checked when connecting
    username: str | None = None
    password: SecretStr | None = Field(default=None, exclude=True)
    api_key: SecretStr | None = Field(default=None, exclude=True)
    verify_certs: bool = True
    ca_certs: str | None = None
    timeout: float = Field(default=REQUEST_TRY_TIMEOUT_S, gt=0)  # seconds one request's try waits
    aws_region: str | None = None  # set: sign requests with AWS SigV4 (botocore's credential chain)
    aws_service: Literal["es", "aoss"] = DEFAULT_AWS_SERVICE  # es: OpenSearch Service; aoss: OpenSearch Serverless
    flavour: str | None = None  # the managed node's; None: the `default` node's own if it exists, else the default

    @field_validator("hosts", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> list[str]:
        return _checked(validate_hosts, value)

    def secret(self, name: str) -> str | None:
        """A secret's value (only for the client that sends it)."""
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None


class IndexOptions(_Section):
    """The index set and the shape of the indices a store creates. Shards and replicas None: the templates' (one
    primary shard; `auto_expand_replicas: 0-1`, one replica wherever the cluster has a second node)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index_prefix: str | None = None  # the index set; None: SHARED_SET (or the workspace's own set from before them)
    workspace_key: str | None = None  # None: from the workspace folder (default_workspace_key)
    shards: int | None = Field(default=None, ge=1, le=1024)
    replicas: int | None = Field(default=None, ge=0)
    dims: int | None = Field(default=None, gt=0, le=16000)  # the vector dimension; None: no vectors
    hnsw_m: int = Field(default=HNSW_M, ge=2)
    hnsw_ef_construction: int = Field(default=HNSW_EF_CONSTRUCTION, ge=2)
    take_over: bool = False  # adopt a workspace another folder's sync writes
    # a strict workspace: in an index set of its own, `<set>-only-<key>` (`strict_set`), so that no term statistic of
    # another workspace reaches its searches (suggesters, BM25, significant_text: docs/GUARANTEES.md)
    strict: bool = False

    @field_validator("index_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        return value if value is None else _checked(validate_prefix, value)

    @field_validator("workspace_key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        return value if value is None else _checked(validate_workspace_key, value)


class SearchOptions(_Section):
    """How searches rank: z-score fusion of the BM25 and k-NN branches at vector weight 0.55 (0.1 for a question
    naming someone through a named person), pseudo-relevance feedback from each branch's top hit, repeated texts shown
    once, and a past question's named dates lifting the notes of those dates by 0.2 (docs/quality.md has the
    figures)."""

    hybrid: str = "auto"  # auto | native (the server fuses) | client (both branches fused here)
    fusion: str | None = "zscore"  # rrf | minmax | zscore; None: the server's native fusion (rrf where it has it)
    vector_weight: float = Field(default=0.55, ge=0.0, le=1.0)
    # client fusion's vector weight for a question naming someone through a named person ("Kwame's stepsister"); None:
    # vector_weight for every question
    relation_vector_weight: float | None = Field(default=0.1, ge=0.0, le=1.0)
    feedback: int = Field(default=1, ge=0, le=10)  # top hits per branch fed back into a second pass (0: off)
    collapse: bool = True  # a text repeated in several chunks shown once, at its best rank
    proximity: float = Field(default=0.0, ge=0.0)  # boost of a proximity re-score of the fused head (0: off)
    date_boost: float = Field(default=0.5, ge=0.0, le=10.0)  # lift of notes dated where a past question points (0: off)
    # weight of a BM25 match on a chunk's neighbours' text (its `context`) in hybrid search (0: its own text only)
    context_boost: float = Field(default=0.35, ge=0.0, le=10.0)
    # lift of hits said by the one speaker a question names ("What did Caroline research?"; 0: off)
    speaker_boost: float = Field(default=0.2, ge=0.0, le=10.0)
    # lift of hits whose note holds much of the fused head (0: off)
    note_boost: float = Field(default=0.5, ge=0.0, le=10.0)
    # the share of its score a hit keeps when it is itself a question ("What did you paint?"; 1: off)
    question_factor: float = Field(default=0.8, ge=0.0, le=1.0)
    # lift of a dialog turn by its length: its score x (1 + this x ln(its words / the candidate turns' median)), at
    # least fusion.MIN_LENGTH_FACTOR of it; chunks without a speaker are left as they are (0: off)
    turn_length: float = Field(default=0.3, ge=0.0, le=2.0)
    keyword_fields: tuple[str, ...] | None = None  # fields BM25 runs over; None: chosen per query
    refresh_after: float = Field(
        default=REFRESH_AFTER_S, ge=0.0
    )  # ReMe plugin: seconds a write may wait to be searchable
    # the optimize job after a large load (merge the chunks index for search, calibrate the width again): ReMe's file
    # store in the background and in optimize_index (engine_settings.json `optimize_job`; false: off)
    optimize_after_load: bool = OPTIMIZE_AFTER_LOAD

    _hybrid = field_validator("hybrid")(classmethod(lambda cls, v: _checked(validate_hybrid, v)))
    _fusion = field_validator("fusion")(classmethod(lambda cls, v: _checked(validate_fusion, v)))
    _feedback = field_validator("feedback", mode="before")(
        classmethod(lambda cls, v: _checked(validate_feedback, _from_text(v)))
    )
    _relation = field_validator("relation_vector_weight", mode="before")(
        classmethod(lambda cls, v: None if isinstance(v, str) and v.strip().lower() in ("none", "off", "") else v)
    )
    _collapse = field_validator("collapse", mode="before")(
        classmethod(lambda cls, v: _checked(validate_collapse, _WORDS.get(str(v).strip().lower(), v)))
    )


class SyncOptions(_Section):
    """What `reme-es sync` indexes and how it embeds."""

    embedding: Literal["none", "local", "e5", "openai"] = "none"
    embedding_model: str = "text-embedding-3-small"
    embedding_base_url: str = "https://api.openai.com/v1"
    embedding_api_key: SecretStr | None = Field(default=None, exclude=True)
    dirs: list[str] = Field(default_factory=lambda: list(REME_DIRS))
    suffixes: list[str] = Field(default_factory=lambda: list(REME_SUFFIXES))
    chunker: Literal["auto", "reme", "builtin"] = "auto"
    max_file_mb: float = Field(default=20.0, gt=0)
    chunk_chars: int = Field(default=1500, ge=200)
    batch_files: int = Field(default=200, ge=1)

    @field_validator("dirs", "suffixes", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _split(value)

    @field_validator("suffixes")
    @classmethod
    def _suffixes(cls, value: list[str]) -> list[str]:
        out = [s.lower().lstrip(".") for s in value]
        unknown = sorted(set(out) - {"md", "jsonl"})
        if unknown:
            raise ValueError(f"suffixes must be md and/or jsonl, got {', '.join(unknown)}")
        return out

    @field_validator("dirs")
    @classmethod
    def _dirs(cls, value: list[str]) -> list[str]:
        for d in value:
            if Path(d).is_absolute() or ".." in Path(d).parts:
                raise ValueError(f"dir {d!r} must be a folder inside the workspace")
        return [d.strip("/") or "." for d in value]


SECTIONS: dict[str, type[_Section]] = {
    "connection": ConnectionOptions,
    "index": IndexOptions,
    "search": SearchOptions,
    "sync": SyncOptions,
}
# Every flat option name, and the section it is filed into.
SECTION_OF: dict[str, str] = {name: section for section, cls in SECTIONS.items() for name in cls.model_fields}


class Options(BaseModel):
    """Every option, in its section; built from flat names (`Options.from_flat`, `load_options`)."""

    model_config = ConfigDict(extra="forbid")

    connection: ConnectionOptions = Field(default_factory=ConnectionOptions)
    index: IndexOptions = Field(default_factory=IndexOptions)
    search: SearchOptions = Field(default_factory=SearchOptions)
    sync: SyncOptions = Field(default_factory=SyncOptions)
    _folder: Path | None = PrivateAttr(default=None)  # the workspace folder the options were loaded for

    NAMES: ClassVar[tuple[str, ...]] = tuple(SECTION_OF)

    @classmethod
    def from_flat(cls, values: Mapping[str, Any]) -> Options:
        """Options from flat names; an unknown name is refused with the closest valid one (ValueError)."""
        sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for name, value in values.items():
            if name not in SECTION_OF:
                import difflib

                close = difflib.get_close_matches(name, SECTION_OF, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"{name}: unknown option{hint}")
            sections[SECTION_OF[name]][name] = value
        return cls.model_validate({section: SECTIONS[section](**given) for section, given in sections.items()})

    @property
    def folder(self) -> Path | None:
        """The workspace folder these options were loaded for (None: none given)."""
        return self._folder

    def with_index(self, **changes: Any) -> Options:
        """A copy with some index options changed (validated)."""
        given = {name: getattr(self.index, name) for name in self.index.model_fields_set}
        index = IndexOptions(**{**given, **changes})  # validated; what was never given stays unset
        copy = self.model_copy(update={"index": index})
        copy._folder = self._folder
        return copy


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `REME_ES_<NAME>` variables that name an option, by option name."""
    environ = os.environ if environ is None else environ
    return {name: environ[ENV_PREFIX + name.upper()] for name in SECTION_OF if ENV_PREFIX + name.upper() in environ}


def describe(exc: ValidationError | ValueError, source: str) -> str:
    """One line naming each invalid option and why, and where the options came from."""
    if not isinstance(exc, ValidationError):
        return f"invalid settings ({source}): {exc}"
    problems = []
    for err in exc.errors():
        loc = [str(x) for x in err["loc"] if str(x) not in SECTIONS]
        msg = err["msg"].removeprefix("Value error, ")
        problems.append(f"{'.'.join(loc) or 'settings'}: {msg}")
    return f"invalid settings ({source}): " + "; ".join(problems)


def build_options(layers: list[tuple[str, Mapping[str, Any]]]) -> Options:
    """Options from named layers of flat values, later layers winning (None values ignored); ConfigError names
    each invalid option and the layers it came from."""
    merged: dict[str, Any] = {}
    sources = []
    for source, values in layers:
        given = {k: v for k, v in values.items() if v is not None}
        if given:
            sources.append(source)
        merged.update(given)
    try:
        return Options.from_flat(merged)
    except (ValidationError, ValueError) as exc:
        raise ConfigError(describe(exc, ", ".join(sources) or "defaults")) from None
    except ConfigError as exc:
        raise ConfigError(f"invalid settings ({', '.join(sources) or 'defaults'}): {exc}") from None


def default_workspace_key(workspace: Path) -> str:
    """`<folder name>-<10 hex of the absolute path>`: two workspace folders never share a key.

    The one derivation for both `reme-es` commands and the ReMe plugin's file store, so a sync writes into the
    workspace ReMe reads.
    """
    root = Path(workspace).expanduser().resolve()
    name = re.sub(r"[^a-z0-9_-]+", "-", root.name.lower()).strip("-_")[:40] or "ws"
    return f"{name}-{hashlib.sha256(str(root).encode('utf-8')).hexdigest()[:10]}"


def default_prefix(workspace: Path) -> str:
    """`reme-<workspace key>`: the index set a workspace had to itself before shared sets (still used where it
    exists; `reme-es migrate` moves it into a shared set)."""
    return f"reme-{default_workspace_key(workspace)}"


def _read_yaml(path: Path) -> dict:
    import yaml  # only with a config file: `reme-es search` without one does not pay for it

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"config file {where} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, got {type(data).__name__}")
    return data


def load_options(
    workspace: Path | None = None,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Options:
    """The CLI's options: the YAML file (`<workspace>/reme-es.yaml` unless another is given) < `REME_ES_*`
    variables < `overrides` (flags; None values ignored). With a workspace, the workspace key defaults to its own."""
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if config_file is None and workspace is not None and (workspace / CONFIG_NAME).is_file():
        config_file = workspace / CONFIG_NAME
    if config_file is not None:
        layers.append((str(config_file), _read_yaml(Path(config_file))))
    env = from_environment(environ)
    layers.append(("environment " + ", ".join(ENV_PREFIX + k.upper() for k in env), env))
    layers.append(("command line", overrides or {}))
    options = build_options(layers)
    if workspace is not None:
        options._folder = Path(workspace)
        if options.index.workspace_key is None:
            options = options.with_index(workspace_key=default_workspace_key(workspace))
            options._folder = Path(workspace)
    if options.index.strict:
        if options.index.workspace_key is None:
            raise ConfigError("--strict puts one workspace in a set of its own: name it (-w FOLDER or --workspace-key)")
        own = strict_set(options.index.index_prefix or SHARED_SET, options.index.workspace_key)
        options = options.with_index(index_prefix=own)
    return options


def strict_set(prefix: str, workspace_key: str) -> str:
    """The index set of a strict workspace: `<set>-only-<key>`, the workspace alone in it (one set's shards per strict
    workspace: 4 shards, so about 333 of them fill a node's 1,000-shard limit beside nothing else)."""
    return validate_prefix(f"{prefix}-only-{validate_workspace_key(workspace_key)}")


__all__ = [
    "CONFIG_NAME",
    "SHARED_SET",
    "ConnectionOptions",
    "IndexOptions",
    "Options",
    "SearchOptions",
    "SyncOptions",
    "build_options",
    "default_prefix",
    "default_workspace_key",
    "load_options",
]
