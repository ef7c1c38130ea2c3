"""ReMe Application configs for the integration tests: ReMe's default.yaml with the reme-es plugin, quiet, every
watcher off, and ReMe's own file-store index job to run on request (test_reme, test_reme_friction)."""

from __future__ import annotations

from pathlib import Path

WATCHERS = [
    "index_update_loop",
    "resource_watch_loop",
    "digest_watch_loop",
    "dream_cron",
    "proactive_refresh_cron",
    "optimize_index_cron",
]


def index_once_job(dirs: list[str], suffixes: list[str]) -> dict:
    """The steps of default.yaml's index_update_loop (the file-store watcher) over `dirs` and `suffixes`, run once."""
    return {
        "backend": "base",
        "watch_dirs": dirs,
        "watch_suffixes": suffixes,
        "steps": [
            {"backend": "init_changes_step", "monitor_type": "file_store", "dispatch_steps": ["update_index_step"]}
        ],
    }


def quiet_config(ws: Path, components: dict, jobs: dict) -> dict:
    """ReMe's resolved config on workspace `ws` with the plugin, no logs or logo, the watchers off, then `jobs`."""
    from reme.config import resolve_app_config

    return resolve_app_config(
        log_config=False,
        workspace_dir=str(ws),
        enable_logo=False,
        log_to_file=False,
        log_to_console=False,
        plugins=["reme-es"],
        components=components,
        jobs={**{name: {"enabled": False} for name in WATCHERS}, **jobs},
    )
