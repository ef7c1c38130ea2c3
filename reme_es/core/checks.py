"""Checks of single option values (hosts, index prefix, workspace key, hybrid mode, fusion, feedback, collapse):
each raises ConfigError naming the value and what is allowed. The options model runs them; so do the parts that
take a value directly."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .engine_settings import valid_prefix
from .errors import ConfigError

HYBRID_MODES = ("auto", "native", "client")
FUSION_METHODS = ("rrf", "minmax", "zscore")
HOST_SCHEMES = ("http", "https")
_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")


def redact_host(url: str) -> str:
    """A host URL with any password replaced by `***` (for messages)."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, hostport = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}" if ":" in userinfo else parts.netloc))


def validate_hosts(hosts: Iterable[str] | str | None) -> list[str]:
    """Normalise a host list given as a list or a comma-separated string; only http:// and https:// URLs pass."""
    if hosts is None:
        return []
    items = hosts.split(",") if isinstance(hosts, str) else list(hosts)
    out = [h.strip().rstrip("/") for h in items if h and h.strip()]
    for h in out:
        scheme, sep, rest = h.partition("://")
        if not sep:
            raise ConfigError(f"host {redact_host(h)!r} needs a scheme, e.g. http://{redact_host(h)} or https://...")
        if scheme.lower() not in HOST_SCHEMES:
            raise ConfigError(
                f"host {redact_host(h)!r} has the unknown scheme {scheme!r}: use http:// or https:// "
                f"(the only schemes reme-es connects with), e.g. {redact_host('https://' + rest)}"
            )
        if not rest.split("/", 1)[0]:
            raise ConfigError(f"host {redact_host(h)!r} has no host name, e.g. http://127.0.0.1:9200")
    return out


def validate_prefix(prefix: str) -> str:
    """Refuse index prefixes that could address other indices (`*`, `_all`, commas, `..`, uppercase)."""
    if not valid_prefix(prefix):
        raise ConfigError(
            f"index prefix {prefix!r} is not allowed: use 1-200 characters of lowercase letters, digits, '-' "
            "and '_', starting with a letter or digit"
        )
    return prefix


def validate_workspace_key(key: object) -> str:
    """Refuse a workspace key that is not 1-100 lowercase letters, digits, '-' and '_' (starting with a letter or
    digit): the key is part of every document id of the workspace. Any value is checked (keys read back from an
    engine are JSON)."""
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise ConfigError(
            f"workspace key {key!r} is not allowed: use 1-100 characters of lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit"
        )
    return key


def validate_hybrid(hybrid: str) -> str:
    """Refuse an unknown hybrid mode."""
    if hybrid not in HYBRID_MODES:
        raise ConfigError(f"hybrid must be one of {', '.join(HYBRID_MODES)}, got {hybrid!r}")
    return hybrid


def validate_fusion(value: str | None) -> str | None:
    """A fusion method name (None: the server's native choice), or ConfigError naming the choices."""
    if value is None or value in FUSION_METHODS:
        return value
    raise ConfigError(f"fusion must be one of {', '.join(FUSION_METHODS)} (or left out), got {value!r}")


def validate_collapse(value: Any) -> bool:
    """Whether to collapse repeated texts (a bool, as YAML gives it), or ConfigError."""
    if isinstance(value, bool):
        return value
    raise ConfigError(f"collapse must be true or false, got {value!r}")


def validate_feedback(value: Any) -> int:
    """A feedback depth (hits per branch used as feedback; 0 turns feedback off), or ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or int(value) != value:
        raise ConfigError(f"feedback must be a whole number of hits >= 0 (0: off), got {value!r}")
    return int(value)
