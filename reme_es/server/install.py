"""Install a flavour into the cache: fetch its artifacts, unpack the distribution, assemble modules and plugins."""

from __future__ import annotations

import fcntl
import json
import logging
import re
import shutil
import zipfile
from pathlib import Path

from ..core.errors import ServerError
from ..core.home import reme_es_home
from .fetch import fetch_artifacts
from .flavours import Artifact, Flavour, Module

log = logging.getLogger("reme_es.server.node")  # the managed node's one logger

_MARKER = ".reme-es-install.json"


def _module_descriptor(module: Module, flavour: Flavour) -> str:
    return (
        f"description={module.description}\nversion={flavour.version}\nname={module.name}\n"
        f"classname={module.classname}\njava.version=11\nopensearch.version={flavour.version}\n"
        f"extended.plugins={module.extended_plugins}\nhas.native.controller=false\ncustom.foldername=\n"
    )


def _extended_names(descriptor: str) -> list[str]:
    m = re.search(r"^extended\.plugins=(.*)$", descriptor, re.MULTILINE)
    return [e.split(";")[0].strip() for e in m.group(1).split(",") if e.strip()] if m else []


def optional_extended(descriptor: str, absent: str) -> str:
    """A plugin descriptor whose `extended.plugins` entry naming `absent` is marked `;optional=true`."""

    def mark(match: re.Match) -> str:
        entries = []
        for entry in filter(None, (e.strip() for e in match.group(1).split(","))):
            name, _, flags = entry.partition(";")
            entries.append(f"{name};optional=true" if name == absent and "optional=true" not in flags else entry)
        return "extended.plugins=" + ",".join(entries)

    return re.sub(r"^extended\.plugins=(.*)$", mark, descriptor, flags=re.MULTILINE)


def install(flavour: Flavour) -> Path:
    """Return the installed home of a flavour, fetching and assembling it once. Concurrent starts of one flavour
    (a test run beside a bench, two early test nodes) take turns on a lock file: the first assembles, the others
    wait and find it installed, so no start unpacks over another's install or removes it while a node uses it."""
    root = reme_es_home()
    target = root / "installs" / f"{flavour.name}-{flavour.version}"
    home = target / flavour.home_name
    if (target / _MARKER).is_file():
        return home
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (target / _MARKER).is_file():
            _assemble(flavour, root, target)
    return home


def _assemble(flavour: Flavour, root: Path, target: Path) -> None:
    """Fetch the artifacts, unpack and assemble into a staging folder, then move it to `target`."""
    paths = fetch_artifacts(list(flavour.artifacts), root / "artifacts")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with zipfile.ZipFile(paths[flavour.distribution]) as zf:
        zf.extractall(staging)
    staged_home = staging / flavour.home_name
    _add_modules(flavour, staged_home, paths)
    _add_plugins(flavour, staged_home, paths)
    for script in (staged_home / "bin").iterdir():
        script.chmod(0o755)
    (staging / _MARKER).write_text(json.dumps({"flavour": flavour.name, "version": flavour.version}))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log.info("installed %s %s at %s", flavour.engine, flavour.version, target / flavour.home_name)


def _add_modules(flavour: Flavour, staged_home: Path, paths: dict[Artifact, Path]) -> None:
    """Assemble the flavour's modules from their jars (those not already in lib/), with descriptor and policy."""
    lib_jars = {p.name for p in (staged_home / "lib").glob("*.jar")}
    for module in flavour.modules:
        folder = staged_home / "modules" / module.name
        folder.mkdir(parents=True, exist_ok=True)
        for jar in module.jars:
            if jar.filename not in lib_jars:
                shutil.copy2(paths[jar], folder / jar.filename)
        (folder / "plugin-descriptor.properties").write_text(_module_descriptor(module, flavour))
        if module.policy:
            (folder / "plugin-security.policy").write_text(module.policy)


def _add_plugins(flavour: Flavour, staged_home: Path, paths: dict[Artifact, Path]) -> None:
    """Unpack the flavour's plugin zips; a plugin extending an absent module gets it as optional, with its jars."""
    for plugin in flavour.plugin_zips:
        with zipfile.ZipFile(paths[plugin]) as zf:
            descriptor = zf.read("plugin-descriptor.properties").decode()
            found = re.search(r"^name=(.+)$", descriptor, re.MULTILINE)
            if found is None:
                raise ServerError(f"{paths[plugin].name}: its plugin-descriptor.properties names no plugin")
            name = found.group(1).strip()
            zf.extractall(staged_home / "plugins" / name)
        for absent in flavour.absent_modules:
            if absent.name in _extended_names(descriptor):
                folder = staged_home / "plugins" / name
                descriptor = optional_extended(descriptor, absent.name)
                (folder / "plugin-descriptor.properties").write_text(descriptor)
                for jar in absent.shared_jars:
                    shutil.copy2(paths[jar], folder / jar.filename)
