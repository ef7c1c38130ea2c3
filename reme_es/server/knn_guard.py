"""The reme-es k-NN guard for the managed OpenSearch node: compiled from our Java source into an install's plugins/.

Why it exists: the k-NN plugin zip on Maven Central carries no native libraries (faiss, nmslib). A knn_vector field
on either engine (or on the default engine, which is one of them) kills the JVM with `UnsatisfiedLinkError` when its
first segment is written, and every restart dies again replaying the translog, so every index on the node becomes
unreachable. Other tools on the same machine create such indices by default (LangChain's and mem0's OpenSearch
stores use nmslib). The plugin (`os_knn_guard/`) refuses those mappings with a 400 naming the lucene engine, and
fails the shards of such an index that already exists instead of letting them crash the node (the index is red, the
node starts, `node.start` names the index).

The jar's name carries a hash of the source and descriptor, so an install built before a change gets the current one
on the next start.
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

NAME = "reme-es-knn-guard"
_SOURCE = "RemeKnnGuardPlugin.java"
_DESCRIPTOR = "plugin-descriptor.properties"


def _source_files() -> dict[str, bytes]:
    folder = resources.files("reme_es").joinpath("server", "os_knn_guard")
    return {name: folder.joinpath(name).read_bytes() for name in (_SOURCE, _DESCRIPTOR)}


def _jar_name(files: dict[str, bytes], version: str) -> str:
    digest = hashlib.sha256(version.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name])
    return f"{NAME}-{digest.hexdigest()[:12]}.jar"


def ensure_knn_guard(home: Path, java_home: Path, version: str) -> Path:
    """Build the guard into `<home>/plugins/reme-es-knn-guard/` unless the current build is there; its folder."""
    files = _source_files()
    jar_name = _jar_name(files, version)
    folder = home / "plugins" / NAME
    if (folder / jar_name).is_file():
        return folder
    javac = java_home / "bin" / "javac"
    if not javac.is_file():
        raise ServerError(
            f"{java_home} has no javac (a JRE, not a JDK). reme-es compiles a small guard plugin for the managed "
            "OpenSearch node (it keeps faiss/nmslib k-NN indices, which this node cannot run, from crashing it); "
            "install a full JDK (e.g. apt-get install openjdk-17-jdk-headless) or point REME_ES_JAVA_HOME at one."
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=home.parent))
    try:
        src, classes, out = staging / "src", staging / "classes", staging / NAME
        for path in (src, classes, out):
            path.mkdir()
        (src / _SOURCE).write_bytes(files[_SOURCE])
        cmd = [str(javac), "--release", "11", "-cp", str(home / "lib" / "*"), "-d", str(classes), str(src / _SOURCE)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise ServerError(f"javac could not compile the {NAME} plugin against {home / 'lib'}:\n{proc.stderr.strip()}")
        with zipfile.ZipFile(out / jar_name, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        (out / _DESCRIPTOR).write_text(string.Template(files[_DESCRIPTOR].decode()).substitute(version=version))
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(folder, staging / "old")  # an older build, removed with the staging folder
        except FileNotFoundError:
            pass
        try:
            os.rename(out, folder)
        except OSError:
            if not (folder / jar_name).is_file():  # a concurrent start with the same build got there first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("built the %s plugin into %s", NAME, folder)
    return folder
