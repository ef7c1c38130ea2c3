"""Small Java plugins of reme-es' own, compiled with the JDK's `javac` into an install's plugins/ on first start.

A plugin is one Java source file and a `plugin-descriptor.properties` template (`$version` and `$release`, the Java
release, filled in) in a package folder under `reme_es/server/`. `edits` adapt the source to another server major
(an import that moved); the edited source is what is hashed and compiled. The jar's name carries a hash of both and
the server version, so an install built before a change (or before the plugin existed) gets the current build on the
next start. The build happens in a
staging folder beside the install and is moved into place at the end, so a failed build leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import string
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..core.errors import ServerError

log = logging.getLogger(__name__)

_DESCRIPTOR = "plugin-descriptor.properties"


@dataclass(frozen=True)
class JavaPlugin:
    """One plugin: its name, its source folder and file, the Java release it targets, and why a node needs it."""

    name: str
    folder: str  # under reme_es/server/
    source: str
    release: str
    why: str  # completes "reme-es compiles a small plugin for ..." in the no-javac error
    jdk_hint: str  # e.g. "a full JDK 21+ (e.g. apt-get install openjdk-21-jdk-headless)"
    edits: tuple[tuple[str, str], ...] = ()  # (text, replacement) pairs applied to the source, each must match

    def source_files(self) -> dict[str, bytes]:
        """The source (with `edits` applied) and descriptor template, read from the package."""
        folder = resources.files("reme_es").joinpath("server", self.folder)
        files = {name: folder.joinpath(name).read_bytes() for name in (self.source, _DESCRIPTOR)}
        text = files[self.source].decode()
        for old, new in self.edits:
            if old not in text:
                raise ServerError(f"{self.name}: the source no longer contains {old!r}; update the plugin's edits")
            text = text.replace(old, new)
        files[self.source] = text.encode()
        return files

    def jar_name(self, files: dict[str, bytes], version: str) -> str:
        """`<name>-<hash of version, Java release and files>.jar`."""
        digest = hashlib.sha256(f"{version}\0{self.release}".encode())
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + files[name])
        return f"{self.name}-{digest.hexdigest()[:12]}.jar"

    def ensure(self, home: Path, java_home: Path, version: str) -> Path:
        """Build the plugin into `<home>/plugins/<name>/` unless the current build is there; its folder."""
        files = self.source_files()
        jar_name = self.jar_name(files, version)
        folder = home / "plugins" / self.name
        if (folder / jar_name).is_file():
            return folder
        javac = java_home / "bin" / "javac"
        if not javac.is_file():
            raise ServerError(
                f"{java_home} has no javac (a JRE, not a JDK). reme-es compiles a small plugin for {self.why}; "
                f"install {self.jdk_hint} or point REME_ES_JAVA_HOME at one."
            )
        staging = Path(tempfile.mkdtemp(prefix=f".{self.name}-", dir=home.parent))
        try:
            self._build(files, jar_name, version, home, javac, staging)
            _replace(staging / self.name, folder, jar_name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        log.info("built %s into %s", jar_name, folder)
        return folder

    def _build(self, files: dict[str, bytes], jar_name: str, version: str, home: Path, javac: Path, staging: Path):
        """Compile against the install's lib/ and write the jar and descriptor to `staging/<name>/`."""
        src, classes, out = staging / "src", staging / "classes", staging / self.name
        for path in (src, classes, out):
            path.mkdir()
        (src / self.source).write_bytes(files[self.source])
        cmd = [str(javac), "--release", self.release, "-cp", str(home / "lib" / "*"), "-d", str(classes)]
        proc = subprocess.run([*cmd, str(src / self.source)], capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise ServerError(
                f"javac could not compile the {self.name} plugin against {home / 'lib'}:\n{proc.stderr.strip()}"
            )
        with zipfile.ZipFile(out / jar_name, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        template = string.Template(files[_DESCRIPTOR].decode())
        (out / _DESCRIPTOR).write_text(template.substitute(version=version, release=self.release))


def _replace(built: Path, folder: Path, jar_name: str) -> None:
    """Move the new build into place; a concurrent start that got there first with the same build wins quietly."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(folder, built.parent / "old")  # an older build (removed with the staging folder)
    except FileNotFoundError:
        pass
    try:
        os.rename(built, folder)
    except OSError:
        if not (folder / jar_name).is_file():
            raise
