"""The JDK a flavour runs on, and the node's JVM options."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..core.errors import ServerError
from ..core.runtime import runtime


def _java_major(java_home: Path) -> int | None:
    release = java_home / "release"
    if release.is_file():
        m = re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?', release.read_text(errors="replace"))
        if m:
            return int(m.group(2)) if m.group(1) == "1" else int(m.group(1))
    java = java_home / "bin" / "java"
    if not java.is_file():
        return None
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        return None
    return int(m.group(2)) if m.group(1) == "1" else int(m.group(1))


def find_java(java_min: int, java_max: int | None = None) -> tuple[Path, int]:
    """Pick the lowest installed JDK with java_min <= major (<= java_max); explicit settings win."""
    explicit = runtime().java_home
    candidates: list[Path] = [explicit] if explicit else []
    if not explicit:
        if env := os.environ.get("JAVA_HOME"):
            candidates.append(Path(env))
        jvm = Path("/usr/lib/jvm")
        if jvm.is_dir():
            candidates += sorted(p for p in jvm.iterdir() if p.is_dir())
        if java := shutil.which("java"):
            candidates.append(Path(java).resolve().parent.parent)
    found: dict[Path, int] = {}
    for home in candidates:
        home = home.resolve()
        if home not in found and (major := _java_major(home)) is not None:
            found[home] = major
    fitting = sorted(
        (major, home) for home, major in found.items() if major >= java_min and (java_max is None or major <= java_max)
    )
    if not fitting:
        seen = ", ".join(f"{h} (Java {m})" for h, m in found.items()) or "none"
        wanted = f"Java {java_min}+" if java_max is None else f"Java {java_min}..{java_max}"
        raise ServerError(
            f"this flavour needs {wanted}; JDKs found: {seen}. Install one (e.g. apt-get install "
            f"openjdk-{max(java_min, 17)}-jdk-headless) or point REME_ES_JAVA_HOME at it."
        )
    if explicit and Path(explicit).resolve() not in {h for _, h in fitting}:
        raise ServerError(f"REME_ES_JAVA_HOME={explicit} is not a JDK of the required version ({java_min}+)")
    major, home = fitting[0]
    return home, major


def _absolute_jvm_paths(options: str, folder: Path, home: Path) -> str:
    """Point the log, heap-dump and error files of jvm.options into the node folder (the start script
    runs from the read-only install), and the 3.x agent jar at the install."""
    logs, data = folder / "logs", folder / "data"
    options = options.replace("-javaagent:agent/", f"-javaagent:{home}/agent/")
    options = re.sub(r"file=(?:logs/)?gc\.log", f"file={logs}/gc.log", options)
    options = re.sub(r"-Xloggc:(?:logs/)?gc\.log", f"-Xloggc:{logs}/gc.log", options)
    options = re.sub(r"-XX:HeapDumpPath=\S+", f"-XX:HeapDumpPath={data}", options)
    return re.sub(r"-XX:ErrorFile=(?:logs/)?", f"-XX:ErrorFile={logs}/", options)
