"""Fetch Maven Central artifacts into the reme-es cache, verified by checksum.

`mvn` is preferred (it honours the machine's Maven settings: mirrors, proxies, local repository); without
`mvn`, a plain HTTPS download checks the `.sha1` Maven Central publishes where there is one. Several of these
files have no published checksum at all (the Elasticsearch 9.3.2 and OpenSearch 3.5.0 zips, neural-search
2.19.1.0), so every artifact a flavour names also carries a pinned sha256, checked after either method.
Files already in the cache are never fetched again.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..core.errors import ServerError
from ..core.runtime import runtime
from .flavours import Artifact

log = logging.getLogger(__name__)

ATTEMPTS = 3
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


def fetch_artifacts(artifacts: list[Artifact], dest: Path) -> dict[Artifact, Path]:
    """Make every artifact present in `dest`, fetching only the missing ones; return their paths."""
    dest.mkdir(parents=True, exist_ok=True)
    missing = [a for a in artifacts if not (dest / a.filename).is_file()]
    if missing:
        method = runtime().fetch or ("mvn" if shutil.which("mvn") else "https")
        log.info("fetching %d artifact(s) with %s: %s", len(missing), method, ", ".join(map(str, missing)))
        for attempt in range(1, ATTEMPTS + 1):  # registries and proxies fail now and then: try again
            try:
                if method == "mvn":
                    _fetch_with_mvn([a for a in missing if not (dest / a.filename).is_file()], dest)
                else:
                    for artifact in missing:
                        if not (dest / artifact.filename).is_file():
                            _fetch_with_https(artifact, dest)
                break
            except ServerError as exc:
                if attempt == ATTEMPTS:
                    raise
                log.warning("fetch attempt %d of %d failed, retrying in %ds: %s", attempt, ATTEMPTS, 5 * attempt, exc)
                time.sleep(5 * attempt)
    return {a: dest / a.filename for a in artifacts}


def _pom(artifacts: list[Artifact]) -> str:
    deps = "\n".join(
        f"<dependency><groupId>{a.group}</groupId><artifactId>{a.name}</artifactId>"
        f"<version>{a.version}</version><type>{a.packaging}</type></dependency>"
        for a in artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>reme-es</groupId><artifactId>fetch</artifactId><version>0</version><packaging>pom</packaging>"
        f"<dependencies>{deps}</dependencies></project>"
    )


def _fetch_with_mvn(artifacts: list[Artifact], dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="reme-es-mvn-") as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(_pom(artifacts))
        out = Path(work) / "out"
        cmd = [
            "mvn", "-B", "-q", "-f", str(pom),
            f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DexcludeTransitive=true", f"-DoutputDirectory={out}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ServerError(
                f"mvn could not fetch {', '.join(map(str, artifacts))}:\n{tail}\n"
                "Check network access to Maven Central (or your Maven mirror), or set REME_ES_FETCH=https."
            )
        for artifact in artifacts:
            got = out / artifact.filename
            if not got.is_file():
                raise ServerError(f"mvn finished but {artifact.filename} is missing from its output")
            _verify_pinned(artifact, got)
            shutil.move(str(got), dest / artifact.filename)


def _verify_pinned(artifact: Artifact, path: Path) -> None:
    if not artifact.sha256:
        return
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != artifact.sha256:
        path.unlink(missing_ok=True)
        raise ServerError(
            f"checksum mismatch for {artifact}: expected sha256 {artifact.sha256}, got {digest.hexdigest()}"
        )


def _published_sha1(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=60) as resp:
            return resp.read().decode().split()[0].strip().lower()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _fetch_with_https(artifact: Artifact, dest: Path) -> None:
    url = f"{runtime().maven_url}/{artifact.path}"
    tmp = dest / (artifact.filename + ".part")
    try:
        expected = _published_sha1(url)
        if expected is None and not artifact.sha256:
            raise ServerError(f"{url} has no published checksum and no pinned sha256; refusing an unverified file")
        digest = hashlib.sha1()
        with urllib.request.urlopen(url, timeout=600) as resp, tmp.open("wb") as fh:
            while chunk := resp.read(1 << 20):
                digest.update(chunk)
                fh.write(chunk)
    except OSError as exc:
        raise ServerError(f"download of {url} failed: {exc}. Check network access to Maven Central.") from exc
    if expected is not None and digest.hexdigest() != expected:
        tmp.unlink(missing_ok=True)
        raise ServerError(f"checksum mismatch for {url}: expected sha1 {expected}, got {digest.hexdigest()}")
    _verify_pinned(artifact, tmp)
    tmp.rename(dest / artifact.filename)
