"""The configuration keys a ReMe file store of reme-es takes, parsed into the options model (`reme_es.core.options`)
with any other key refused.

A file store's keys are the options of the connection, index and search sections (`hosts`, `index_prefix`,
`vector_weight`, ...; the engine comes from the backend's name) and the ReMe components it binds. `REME_ES_<NAME>`
variables fill what ReMe's keys leave out, so a password can stay out of the config file.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..core.errors import ConfigError
from ..core.options import SECTION_OF, Options, build_options, from_environment

# Keys ReMe's default.yaml gives `file_store.default` for its local store; a config that `extends: default` passes them
# to every file store, so they are accepted here and mean nothing.
REME_PASS_THROUGH_KEYS = ("store_name", "keyword_index", "file_graph")
# What ReMe's Application gives every component (BaseComponent's own arguments).
_COMPONENT_KEYS = ("name", "backend", "app_context")
# The ReMe components a file store binds by name.
COMPONENT_BINDINGS = ("embedding_store", "tag_index")
# The options a file store takes: every option of these sections but the engine (the backend names it).
OPTION_KEYS = tuple(n for n, s in SECTION_OF.items() if s in ("connection", "index", "search") and n != "engine")


def file_store_keys() -> list[str]:
    """Every configuration key a file store takes: where to connect first, then the bound components, then the rest."""
    first = ("hosts", "index_prefix")
    return [*first, *COMPONENT_BINDINGS, *(k for k in OPTION_KEYS if k not in first)]


def split_keys(cls: type, kwargs: Mapping[str, Any]) -> tuple[dict, dict]:
    """BaseComponent's arguments and the option keys of `kwargs`; ReMe's pass-through keys dropped, any other key
    refused with the closest valid one."""
    known = {*_COMPONENT_KEYS, *REME_PASS_THROUGH_KEYS, *OPTION_KEYS}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        valid = file_store_keys()
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
            hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        where = f"file_store.{kwargs['name']}" if kwargs.get("name") else "file store"
        raise ConfigError(
            f"{where} ({cls.__name__}): unknown key{'s' if len(unknown) > 1 else ''} {', '.join(hints)}. "
            f"Valid keys: {', '.join(valid)} (ReMe's {', '.join(REME_PASS_THROUGH_KEYS)} are accepted and ignored)"
        )
    component = {k: v for k, v in kwargs.items() if k in _COMPONENT_KEYS}
    options = {k: v for k, v in kwargs.items() if k in OPTION_KEYS}
    return component, options


def plugin_options(given: Mapping[str, Any], engine: str, name: str = "file store") -> Options:
    """The options of one file store: `REME_ES_*` variables < ReMe's keys; empty strings count as not given."""
    env = {k: v for k, v in from_environment().items() if k in OPTION_KEYS}
    keys = {k: v for k, v in given.items() if v != ""}
    return build_options([("environment", env), (f"file_store.{name}", {**keys, "engine": engine})])
