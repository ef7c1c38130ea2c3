"""The configuration keys a ReMe file store of reme-es takes, and the check that refuses any other key."""

from __future__ import annotations

import difflib
import inspect

from ..core.errors import ConfigError

# Keys ReMe's default.yaml gives `file_store.default` for its local store; a config that `extends: default` passes them
# to every file store, so they are accepted here and mean nothing.
REME_PASS_THROUGH_KEYS = ("store_name", "keyword_index", "file_graph")
# What ReMe's Application gives every component (BaseComponent's own arguments).
_COMPONENT_KEYS = ("name", "backend", "app_context")


def file_store_keys(cls: type) -> list[str]:
    """The configuration keys a file store class takes (its constructor's named parameters)."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


def _checked_keys(cls: type, kwargs: dict) -> dict:
    """BaseComponent's arguments from `kwargs`; ReMe's pass-through keys dropped, any other key refused."""
    unknown = sorted(set(kwargs) - set(_COMPONENT_KEYS) - set(REME_PASS_THROUGH_KEYS))
    if unknown:
        valid = file_store_keys(cls)
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
            hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        where = f"file_store.{kwargs['name']}" if kwargs.get("name") else "file store"
        raise ConfigError(
            f"{where} ({cls.__name__}): unknown key{'s' if len(unknown) > 1 else ''} {', '.join(hints)}. "
            f"Valid keys: {', '.join(valid)} (ReMe's {', '.join(REME_PASS_THROUGH_KEYS)} are accepted and ignored)"
        )
    return {k: v for k, v in kwargs.items() if k in _COMPONENT_KEYS}
