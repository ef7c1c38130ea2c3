"""The reme-es test analysis plugin for Elasticsearch: compiled from our Java source into an install's plugins/.

Why it exists: the Elasticsearch integ-test zip (the only distribution on Maven Central) lacks the
analysis-common module, and Maven Central does not publish it. The `.security` system index, created on first
use of API keys, defines an analyzer `email` from four analysis-common components (tokenizer `uax_url_email`,
filters `pattern_capture`, `lowercase`, `unique`); without them `POST /_security/api_key` answers 400
"Unknown filter type [pattern_capture]". The plugin (`es_test_analysis/`) registers those four on top of
Lucene's implementations, which the distribution's lib/ already holds.

The jar's name carries a hash of the source and descriptor, so an install built before a change (or before the
plugin existed) gets the current one on the next start.
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
from importlib import resources
from pathlib import Path

from ..errors import ServerError

log = logging.getLogger(__name__)

NAME = "reme-es-test-analysis"
_SOURCE = "RemeTestAnalysisPlugin.java"
_DESCRIPTOR = "plugin-descriptor.properties"


def _source_files() -> dict[str, bytes]:
    folder = resources.files("reme_es").joinpath("server", "es_test_analysis")
    return {name: folder.joinpath(name).read_bytes() for name in (_SOURCE, _DESCRIPTOR)}


def _jar_name(files: dict[str, bytes], version: str) -> str:
    digest = hashlib.sha256(version.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name])
    return f"{NAME}-{digest.hexdigest()[:12]}.jar"


def ensure_analysis_plugin(home: Path, java_home: Path, version: str) -> Path:
    """Build the plugin into `<home>/plugins/reme-es-test-analysis/` unless the current build is there; its folder."""
    files = _source_files()
    jar_name = _jar_name(files, version)
    folder = home / "plugins" / NAME
    if (folder / jar_name).is_file():
        return folder
    javac = java_home / "bin" / "javac"
    if not javac.is_file():
        raise ServerError(
            f"{java_home} has no javac (a JRE, not a JDK). reme-es compiles a small analysis plugin for the "
            "Elasticsearch test node (the integ-test distribution lacks analysis-common, which the .security index "
            "needs); install a full JDK 21+ (e.g. apt-get install openjdk-21-jdk-headless) or point "
            "REME_ES_JAVA_HOME at one."
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=home.parent))
    try:
        _build(files, jar_name, version, home, javac, staging)
        _replace(staging / NAME, folder, jar_name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("built the %s plugin into %s", NAME, folder)
    return folder


def _build(files: dict[str, bytes], jar_name: str, version: str, home: Path, javac: Path, staging: Path) -> None:
    """Compile against the install's lib/ and write the jar and descriptor to `staging/NAME/`."""
    src, classes, out = staging / "src", staging / "classes", staging / NAME
    for path in (src, classes, out):
        path.mkdir()
    (src / _SOURCE).write_bytes(files[_SOURCE])
    cmd = [str(javac), "--release", "21", "-cp", str(home / "lib" / "*"), "-d", str(classes), str(src / _SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise ServerError(f"javac could not compile the {NAME} plugin against {home / 'lib'}:\n{proc.stderr.strip()}")
    with zipfile.ZipFile(out / jar_name, "w", zipfile.ZIP_DEFLATED) as jar:
        for path in sorted(classes.rglob("*.class")):
            jar.write(path, path.relative_to(classes).as_posix())
    template = string.Template(files[_DESCRIPTOR].decode())
    (out / _DESCRIPTOR).write_text(template.substitute(version=version))


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
