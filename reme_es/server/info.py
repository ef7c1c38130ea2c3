"""What is recorded about a node: NodeInfo in node.json, its folder, its log."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core.errors import ServerError
from .install import reme_es_home


@dataclass
class NodeInfo:
    """What `node.json` records about a running (or last started) node."""

    name: str
    flavour: str
    engine: str
    version: str
    pid: int
    http_port: int
    transport_port: int
    home: str
    dir: str
    scheme: str = "http"
    red_indices: dict[str, str] = field(default_factory=dict)  # index -> why its primaries are unassigned
    snapshot_repo: str | None = None  # the node's path.repo, if it was started with one

    @property
    def url(self) -> str:
        """HTTP(S) address of the node."""
        return f"{self.scheme}://127.0.0.1:{self.http_port}"

    def red_index_advice(self) -> list[str]:
        """One line per red index: its name, why it is red and how to remove it."""
        return [
            f"index {index!r} is red ({reason}); the node serves every other index. Remove it with: "
            f"curl -X DELETE '{self.url}/{index}'"
            for index, reason in self.red_indices.items()
        ]


@dataclass(frozen=True)
class NodeSecurity:
    """How the launcher talks to a secured node while it waits for health: HTTPS verified against `ca_certs` (a
    PEM file on this machine) and basic auth. The node's own TLS/user settings go in `settings`/`config_files`;
    the credentials are never written to node.json."""

    ca_certs: str
    username: str
    password: str = field(repr=False)


def node_dir(name: str) -> Path:
    """Folder of the node called `name`."""
    return reme_es_home() / "nodes" / name


def read_node(name: str) -> NodeInfo | None:
    """The recorded state of a node, or None if it was never started."""
    path = node_dir(name) / "node.json"
    if not path.is_file():
        return None
    return NodeInfo(**json.loads(path.read_text()))


def write_node(info: NodeInfo) -> None:
    """Record `info` in the node's node.json."""
    (Path(info.dir) / "node.json").write_text(json.dumps(asdict(info), indent=2))


def log_tail(name: str, lines: int = 40) -> str:
    """The last lines of the node's own log (or its stdout when the JVM died before logging)."""
    folder = node_dir(name)
    logs = sorted((folder / "logs").glob(f"reme-es-{name}*.log"), key=lambda p: p.stat().st_mtime)
    chosen = [p for p in [*logs[-1:], folder / "stdout.log"] if p.is_file() and p.stat().st_size]
    text = "\n".join(p.read_text(errors="replace") for p in chosen)
    return "\n".join(text.strip().splitlines()[-lines:])


# A secured node's kept security material (secure.py makes it): its folder, and what reading it gives.
SECRET = "secret"


def secret_dir(name: str) -> Path:
    """The node's folder of kept security material."""
    return node_dir(name) / SECRET


def is_secured(name: str) -> bool:
    """Whether node `name` was made secured (its security material is kept)."""
    return (secret_dir(name) / "security.json").is_file()


def credentials(name: str) -> NodeSecurity:
    """How to reach secured node `name` as its admin (CA file, user, password read from its 0600 file)."""
    folder = secret_dir(name)
    if not is_secured(name):
        raise ServerError(f"node {name!r} is not secured (no {folder / 'security.json'})")
    kept = json.loads((folder / "security.json").read_text())
    password = (folder / "admin.password").read_text().strip()
    return NodeSecurity(ca_certs=str(folder / "ca.crt"), username=kept["admin"], password=password)


def describe(name: str) -> dict | None:
    """What `server status` shows of a secured node: user, password file, CA file (never the password)."""
    if not is_secured(name):
        return None
    folder = secret_dir(name)
    kept = json.loads((folder / "security.json").read_text())
    return {
        "username": kept["admin"],
        "password_file": str(folder / "admin.password"),
        "ca_certs": str(folder / "ca.crt"),
    }
