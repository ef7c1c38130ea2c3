"""Settings of the `reme-es` command line: YAML file < `REME_ES_*` environment variables < command-line flags.

    hosts: [https://search.example:9200]     # none: the managed local node (`reme-es server start`)
    engine: auto                             # auto | a registered engine: opensearch, elasticsearch, aoss
    index_prefix: team                       # the index set (default: reme, shared by every workspace)
    workspace_key: notes                     # the workspace in the set (default: <folder name>-<hash of its path>)
    replicas: 1                              # default unset: one replica wherever the cluster has a second node
    shards: 1
    username: ...; password / api_key only from the environment (REME_ES_PASSWORD, REME_ES_API_KEY) ideally
    aws_region: eu-west-1                    # Amazon OpenSearch: sign with AWS SigV4 (botocore's credential chain)
    aws_service: es                          # es (OpenSearch Service) | aoss (OpenSearch Serverless)
    embedding: none                          # none | local (all-MiniLM-L6-v2, 384-d) | e5 | openai
    dirs: [daily, digest]                    # ReMe's file-store file set; add resource (and jsonl) to index more
    suffixes: [md]
    chunker: auto                            # auto (ReMe's chunkers when reme-ai is installed) | reme | builtin

Secrets are `SecretStr`: they never appear in `repr`, in `model_dump()` or in error messages. AWS credentials are
never settings: botocore reads them (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError, field_validator

from .adapters.base import ClientSettings, validate_hosts
from .adapters.scope import validate_workspace_key
from .errors import ConfigError
from .server.flavours import LOCAL_FLAVOURS
from .store import validate_hybrid, validate_prefix
from .templates import IndexOptions

CONFIG_NAME = "reme-es.yaml"
# What ReMe's file-store watcher (default.yaml's index_update_loop) indexes: Markdown in daily_dir and digest_dir.
# ReMe's start-up scan deletes from the file store anything outside this set, so sync defaults to it.
REME_DIRS = ("daily", "digest")
REME_SUFFIXES = ("md",)
ENV_PREFIX = "REME_ES_"
SHARED_SET = "reme"  # the index set new workspaces go to when none is named


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseModel):
    """Everything the command line needs to reach a cluster and sync a workspace."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    hosts: list[str] = Field(default_factory=list)
    engine: str = "auto"  # auto or a registered dialect (reme_es.adapters.registry)
    index_prefix: str | None = None  # the index set; None: SHARED_SET (or the workspace's own set from before them)
    workspace_key: str | None = None  # None: from the workspace folder (default_workspace_key)
    replicas: int | None = Field(default=None, ge=0)  # None: auto_expand_replicas 0-1
    shards: int = Field(default=1, ge=1, le=1024)
    username: str | None = None
    password: SecretStr | None = Field(default=None, exclude=True)
    api_key: SecretStr | None = Field(default=None, exclude=True)
    verify_certs: bool = True
    ca_certs: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    aws_region: str | None = None
    aws_service: Literal["es", "aoss"] = "es"
    embedding: Literal["none", "local", "e5", "openai"] = "none"
    embedding_model: str = "text-embedding-3-small"
    embedding_base_url: str = "https://api.openai.com/v1"
    embedding_api_key: SecretStr | None = Field(default=None, exclude=True)
    dims: int | None = Field(default=None, gt=0, le=16000)
    hybrid: str = "auto"  # auto | native | client (checked by reme_es.store.validate_hybrid)
    # hybrid fusion as the ReMe drop-in's (issue 22, chosen on both quality sets): z-score at vector weight 0.55 with
    # pseudo-relevance feedback from each branch's top hit; `fusion: rrf`, `feedback: 0` give the earlier RRF search
    vector_weight: float = Field(default=0.55, ge=0.0, le=1.0)
    fusion: Literal["rrf", "minmax", "zscore"] = "zscore"
    feedback: int = Field(default=1, ge=0, le=10)
    collapse: bool = True  # a text repeated in several chunks is shown once, at its best rank (false: every copy)
    date_boost: float = Field(default=0.0, ge=0.0, le=10.0)  # boost of hits dated where the question points (0: off)
    dirs: list[str] = Field(default_factory=lambda: list(REME_DIRS))
    suffixes: list[str] = Field(default_factory=lambda: list(REME_SUFFIXES))
    chunker: Literal["auto", "reme", "builtin"] = "auto"
    max_file_mb: float = Field(default=20.0, gt=0)
    chunk_chars: int = Field(default=1500, ge=200)
    batch_files: int = Field(default=200, ge=1)
    # the managed node's flavour; None: the `default` node's own if it exists, else the default (node.flavour_of)
    flavour: Literal[LOCAL_FLAVOURS] | None = None  # type: ignore[valid-type]  # the names in server/flavours.py

    @field_validator("engine")
    @classmethod
    def _registered_engine(cls, value: str) -> str:
        from .adapters.registry import engine_names

        if value != "auto" and value not in engine_names():
            raise ValueError(f"engine must be auto or one of {', '.join(engine_names())}, got {value!r}")
        return value

    @field_validator("collapse", mode="before")
    @classmethod
    def _true_or_false(cls, value):
        words = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
        if isinstance(value, bool):
            return value
        if isinstance(value, str | int) and str(value).strip().lower() in words:
            return words[str(value).strip().lower()]
        raise ValueError(f"collapse must be true or false, got {value!r}")

    @field_validator("hybrid")
    @classmethod
    def _hybrid_mode(cls, value: str) -> str:
        try:
            return validate_hybrid(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("hosts", "dirs", "suffixes", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _split(value)

    @field_validator("hosts")
    @classmethod
    def _check_hosts(cls, value: list[str]) -> list[str]:
        try:
            return validate_hosts(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("suffixes")
    @classmethod
    def _check_suffixes(cls, value: list[str]) -> list[str]:
        out = [s.lower().lstrip(".") for s in value]
        unknown = sorted(set(out) - {"md", "jsonl"})
        if unknown:
            raise ValueError(f"suffixes must be md and/or jsonl, got {', '.join(unknown)}")
        return out

    @field_validator("dirs")
    @classmethod
    def _check_dirs(cls, value: list[str]) -> list[str]:
        for d in value:
            if Path(d).is_absolute() or ".." in Path(d).parts:
                raise ValueError(f"dir {d!r} must be a folder inside the workspace")
        return [d.strip("/") or "." for d in value]

    _folder: Path | None = PrivateAttr(default=None)  # the workspace folder the settings were loaded for

    @field_validator("index_prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value is not None:
            validate_prefix(value)
        return value

    @field_validator("workspace_key")
    @classmethod
    def _check_key(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                validate_workspace_key(value)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def folder(self) -> Path | None:
        """The workspace folder these settings were loaded for (None: none given)."""
        return self._folder

    def index_options(self, dims: int | None = None) -> IndexOptions:
        """The options new indices are created with: vector dimension, shards and replicas."""
        return IndexOptions(dims=dims, shards=self.shards, replicas=self.replicas)

    def client_settings(self) -> ClientSettings:
        """Connection settings for a dialect (secrets unwrapped only here)."""
        return ClientSettings(
            hosts=self.hosts,
            username=self.username,
            password=self.password.get_secret_value() if self.password else None,
            api_key=self.api_key.get_secret_value() if self.api_key else None,
            verify_certs=self.verify_certs,
            ca_certs=self.ca_certs,
            timeout=self.timeout,
            aws_region=self.aws_region,
            aws_service=self.aws_service,
        )


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


def _describe(exc: ValidationError, source: str) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "settings"
        msg = err["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {msg}")
    return f"invalid settings ({source}): " + "; ".join(problems)


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


def _from_env(environ: dict[str, str]) -> dict:
    out = {}
    for name in Settings.model_fields:
        key = ENV_PREFIX + name.upper()
        if key in environ:
            out[name] = environ[key]
    return out


def load_settings(
    workspace: Path | None = None,
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Merge the YAML file, the environment and explicit overrides (None values ignored), then validate."""
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources = []
    if config_file is None and workspace is not None and (workspace / CONFIG_NAME).is_file():
        config_file = workspace / CONFIG_NAME
    if config_file is not None:
        merged.update(_read_yaml(Path(config_file)))
        sources.append(str(config_file))
    env = _from_env(environ)
    if env:
        sources.append("environment " + ", ".join(ENV_PREFIX + k.upper() for k in env))
    merged.update(env)
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    if flags:
        sources.append("command line")
    merged.update(flags)
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, ", ".join(sources) or "defaults")) from None
    except ConfigError as exc:
        raise ConfigError(f"invalid settings ({', '.join(sources) or 'defaults'}): {exc}") from None
    if workspace is not None:
        settings._folder = Path(workspace)
        if settings.workspace_key is None:
            settings.workspace_key = default_workspace_key(workspace)
    return settings


__all__ = ["CONFIG_NAME", "SHARED_SET", "Settings", "default_prefix", "default_workspace_key", "load_settings"]
