"""The process-wide `REME_ES_*` variables (home, debug, the JDK, where nodes are fetched from, the test cluster), read
from the environment when asked, never at import; the options of a command are `options.py`'s."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from .errors import ConfigError
from .options import ENV_PREFIX, describe


class Runtime(BaseModel):
    """Process-wide variables, read from the environment when asked (`runtime()`), never at import."""

    home: Path | None = None  # REME_ES_HOME: cache, installs, node folders and sync state
    debug: bool = False  # REME_ES_DEBUG: a CLI error shows its traceback
    watch_polling: bool = False  # REME_ES_WATCH_POLLING: `sync --watch` polls instead of inotify
    java_home: Path | None = None  # REME_ES_JAVA_HOME: the JDK the managed node runs on
    java_opts: str | None = None  # REME_ES_JAVA_OPTS: JVM options added to a managed node's start (after the heap)
    maven_url: str = "https://repo1.maven.org/maven2"  # REME_ES_MAVEN_URL: where the launcher fetches nodes
    fetch: Literal["mvn", "https"] | None = None  # REME_ES_FETCH: how (None: mvn where installed, else https)
    test_hosts: str | None = None  # REME_ES_TEST_HOSTS: the contract suite's cluster
    test_engine: str = "auto"  # REME_ES_TEST_ENGINE: its engine


def runtime(environ: Mapping[str, str] | None = None) -> Runtime:
    """The process-wide `REME_ES_*` variables now."""
    environ = os.environ if environ is None else environ
    values = {
        name: environ[ENV_PREFIX + name.upper()]
        for name in Runtime.model_fields
        if environ.get(ENV_PREFIX + name.upper())
    }
    try:
        return Runtime.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(describe(exc, "environment")) from None
