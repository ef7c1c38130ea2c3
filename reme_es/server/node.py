"""Managed local node: install a flavour from the cache, configure one node on 127.0.0.1, start, stop.

Layout below the reme-es home (`REME_ES_HOME`; default `~/.cache/reme-es`, `/var/cache/reme-es` for root):

    artifacts/                       files fetched from Maven Central, one copy per version
    installs/<flavour>-<version>/    unpacked distribution + assembled modules + plugins (read-only use; an
                                     Elasticsearch install also gets reme-es' test analysis plugin, see es_plugin)
    nodes/<name>/                    one node: config/, data/, logs/, tmp/, node.json (pid, port, url)

Installs are shared and reused across runs; every node has its own config and data. OpenSearch and
Elasticsearch refuse to run as root, so as root the JVM runs as the unprivileged user `reme-es`.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ServerError
from .es_plugin import ensure_analysis_plugin
from .fetch import fetch_artifacts
from .flavours import Flavour, Module, get_flavour
from .knn_guard import ensure_knn_guard

log = logging.getLogger(__name__)

RUN_USER = "reme-es"
_MARKER = ".reme-es-install.json"
RED_SETTLE_SECONDS = 5.0  # red, with nothing initialising and no pending tasks, for this long: start-up is over


def reme_es_home() -> Path:
    """Root folder of the cache, installs and node folders."""
    if env := os.environ.get("REME_ES_HOME"):
        return Path(env).expanduser().resolve()
    if os.geteuid() == 0:
        return Path("/var/cache/reme-es")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "reme-es"


# ---------------------------------------------------------------------------------------------- Java


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
    explicit = os.environ.get("REME_ES_JAVA_HOME")
    candidates: list[Path] = [Path(explicit)] if explicit else []
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
        ((major, home) for home, major in found.items() if major >= java_min and (java_max is None or major <= java_max))
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


# ------------------------------------------------------------------------------------------- install


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
    """Return the installed home of a flavour, fetching and assembling it once."""
    root = reme_es_home()
    target = root / "installs" / f"{flavour.name}-{flavour.version}"
    home = target / flavour.home_name
    if (target / _MARKER).is_file():
        return home
    paths = fetch_artifacts(list(flavour.artifacts), root / "artifacts")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with zipfile.ZipFile(paths[flavour.distribution]) as zf:
        zf.extractall(staging)
    staged_home = staging / flavour.home_name
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
    for plugin in flavour.plugin_zips:
        with zipfile.ZipFile(paths[plugin]) as zf:
            descriptor = zf.read("plugin-descriptor.properties").decode()
            name = re.search(r"^name=(.+)$", descriptor, re.MULTILINE).group(1).strip()
            zf.extractall(staged_home / "plugins" / name)
        for absent in flavour.absent_modules:
            if absent.name in _extended_names(descriptor):
                folder = staged_home / "plugins" / name
                descriptor = optional_extended(descriptor, absent.name)
                (folder / "plugin-descriptor.properties").write_text(descriptor)
                for jar in absent.shared_jars:
                    shutil.copy2(paths[jar], folder / jar.filename)
    for script in (staged_home / "bin").iterdir():
        script.chmod(0o755)
    (staging / _MARKER).write_text(json.dumps({"flavour": flavour.name, "version": flavour.version}))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log.info("installed %s %s at %s", flavour.engine, flavour.version, home)
    return home


# ----------------------------------------------------------------------------------------- the node


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


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port(start: int | None = None) -> int:
    if start is not None:
        for port in range(start, start + 100):
            if _port_free(port):
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_user() -> pwd.struct_passwd | None:
    """The unprivileged user the JVM runs as when we are root (created on first use)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(RUN_USER)
    except KeyError:
        pass
    nologin = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
    cmd = ["useradd", "--system", "--no-create-home", "--shell", nologin, RUN_USER]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ServerError(f"could not create the unprivileged user {RUN_USER!r}: {proc.stderr.strip()}")
    return pwd.getpwnam(RUN_USER)


def _make_traversable(path: Path) -> None:
    """Let the run user reach `path` (o+x on every parent, o+rX below) when running as root."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)
    subprocess.run(["chmod", "-R", "o+rX", str(path)], check=True)


def _node_settings(
    flavour: Flavour, folder: Path, http_port: int, transport_port: int, extra: dict | None = None
) -> str:
    settings = {
        "cluster.name": f"reme-es-{folder.name}",
        "node.name": folder.name,
        "path.data": str(folder / "data"),
        "path.logs": str(folder / "logs"),
        "network.host": "127.0.0.1",
        "http.port": http_port,
        "transport.port": transport_port,
        "discovery.type": "single-node",
        "cluster.routing.allocation.disk.threshold_enabled": False,
    }
    if flavour.engine == "elasticsearch":
        settings["xpack.security.enabled"] = False
    for key, value in (extra or {}).items():
        if value is None:
            settings.pop(key, None)  # e.g. a cluster node drops discovery.type
        else:
            settings[key] = value
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items())


def _absolute_jvm_paths(options: str, folder: Path, home: Path) -> str:
    """Point the log, heap-dump and error files of jvm.options into the node folder (the start script
    runs from the read-only install), and the 3.x agent jar at the install."""
    logs, data = folder / "logs", folder / "data"
    options = options.replace("-javaagent:agent/", f"-javaagent:{home}/agent/")
    options = re.sub(r"file=(?:logs/)?gc\.log", f"file={logs}/gc.log", options)
    options = re.sub(r"-Xloggc:(?:logs/)?gc\.log", f"-Xloggc:{logs}/gc.log", options)
    options = re.sub(r"-XX:HeapDumpPath=\S+", f"-XX:HeapDumpPath={data}", options)
    return re.sub(r"-XX:ErrorFile=(?:logs/)?", f"-XX:ErrorFile={logs}/", options)


def node_dir(name: str) -> Path:
    """Folder of the node called `name`."""
    return reme_es_home() / "nodes" / name


def read_node(name: str) -> NodeInfo | None:
    """The recorded state of a node, or None if it was never started."""
    path = node_dir(name) / "node.json"
    if not path.is_file():
        return None
    return NodeInfo(**json.loads(path.read_text()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _http_json(url: str, timeout: float = 5.0, security: NodeSecurity | None = None) -> dict:
    if security is None:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read())
    import base64

    token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
    request = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
    context = ssl.create_default_context(cafile=security.ca_certs)
    with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
        return json.loads(resp.read())


def log_tail(name: str, lines: int = 40) -> str:
    """The last lines of the node's own log (or its stdout when the JVM died before logging)."""
    folder = node_dir(name)
    logs = sorted((folder / "logs").glob(f"reme-es-{name}*.log"), key=lambda p: p.stat().st_mtime)
    chosen = [p for p in [*logs[-1:], folder / "stdout.log"] if p.is_file() and p.stat().st_size]
    text = "\n".join(p.read_text(errors="replace") for p in chosen)
    return "\n".join(text.strip().splitlines()[-lines:])


def start(
    flavour_name: str,
    name: str = "default",
    http_port: int | None = None,
    heap: str = "512m",
    timeout: float = 180.0,
    settings: dict | None = None,
    config_files: dict[str, bytes] | None = None,
    security: NodeSecurity | None = None,
) -> NodeInfo:
    """Install if needed, configure and start a node, and wait until it reports yellow health.

    A node whose only problem is a red index (say, one that cannot be allocated or whose shards the k-NN guard
    fails) starts anyway once its health has settled: `NodeInfo.red_indices` names them and the log says how to
    remove them.

    `settings` are extra node settings (e.g. `thread_pool.write.queue_size`) written to the node's config; a None
    value removes a default (e.g. `discovery.type` for a cluster node). `config_files` are written into the node's
    config folder before start (certificates, users files). With `security` the node is reached over HTTPS with
    those credentials and start-up waits for an authenticated 200 (not an open port).
    """
    flavour = get_flavour(flavour_name)
    current = read_node(name)
    if current and _alive(current.pid):
        if current.flavour != flavour.name:
            raise ServerError(f"node {name!r} already runs {current.flavour}; stop it first (reme-es server stop)")
        return current
    java_home, _ = find_java(flavour.java_min, flavour.java_max)
    home = install(flavour)
    if http_port is not None and not _port_free(http_port):
        raise ServerError(f"port {http_port} on 127.0.0.1 is taken; choose another with --port or stop what uses it")
    http_port = http_port or _free_port(9200)
    if flavour.engine == "elasticsearch":
        ensure_analysis_plugin(home, java_home, flavour.version)  # the .security index needs it (API keys)
    if flavour.knn_guard:
        ensure_knn_guard(home, java_home, flavour.version)  # refuse faiss/nmslib: no native libraries here
    transport_port = _free_port()

    folder = node_dir(name)
    shutil.rmtree(folder / "config", ignore_errors=True)
    shutil.copytree(home / "config", folder / "config")
    for sub in ("data", "logs", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf_name = "opensearch.yml" if flavour.engine == "opensearch" else "elasticsearch.yml"
    (folder / "config" / conf_name).write_text(_node_settings(flavour, folder, http_port, transport_port, settings))
    for rel, content in (config_files or {}).items():
        target = folder / "config" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    jvm_options = folder / "config" / "jvm.options"
    jvm_options.write_text(_absolute_jvm_paths(jvm_options.read_text(), folder, home))

    prefix = "OPENSEARCH" if flavour.engine == "opensearch" else "ES"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "LANG": "C.UTF-8",
        f"{prefix}_JAVA_HOME": str(java_home),
        f"{prefix}_PATH_CONF": str(folder / "config"),
        f"{prefix}_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}",
        f"{prefix}_TMPDIR": str(folder / "tmp"),
    }
    user = _run_user()
    if user is not None:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(folder)], check=True)
        _make_traversable(home.parent)
        _make_traversable(folder)
    stdout = (folder / "stdout.log").open("wb")
    try:
        proc = subprocess.Popen(
            [str(home / "bin" / flavour.engine)],
            cwd=folder,
            env=env,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            extra_groups=[] if user else None,
        )
    finally:
        stdout.close()
    info = NodeInfo(
        name=name,
        flavour=flavour.name,
        engine=flavour.engine,
        version=flavour.version,
        pid=proc.pid,
        http_port=http_port,
        transport_port=transport_port,
        home=str(home),
        dir=str(folder),
        scheme="https" if security else "http",
    )
    (folder / "node.json").write_text(json.dumps(asdict(info), indent=2))
    _wait_healthy(info, proc, timeout, security)
    return info


def _wait_healthy(
    info: NodeInfo, proc: subprocess.Popen, timeout: float, security: NodeSecurity | None = None
) -> None:
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    url = f"{info.url}/_cluster/health?wait_for_status=yellow&timeout=2s"
    red_since: float | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(
                f"{info.flavour} node {info.name!r} exited with code {proc.returncode} during start-up. "
                f"Last log lines:\n{log_tail(info.name)}"
            )
        try:
            try:
                health = _http_json(url, timeout=5, security=security)
            except urllib.error.HTTPError as exc:
                if exc.code != 408:  # 408: not yellow within the wait; the body is the health all the same
                    raise
                health = json.loads(exc.read())
            if health.get("status") in ("yellow", "green"):
                _check_node_name(info, security)
                return
            settled = (
                health.get("status") == "red"
                and not health.get("initializing_shards")
                and not health.get("delayed_unassigned_shards")
                and not health.get("number_of_pending_tasks")
            )
            red_since = (red_since or time.monotonic()) if settled else None
            if red_since is not None and time.monotonic() - red_since >= RED_SETTLE_SECONDS:
                _check_node_name(info, security)
                info.red_indices = _red_indices(info, security)
                (Path(info.dir) / "node.json").write_text(json.dumps(asdict(info), indent=2))
                for line in info.red_index_advice():
                    log.warning("%s node %r: %s", info.flavour, info.name, line)
                return
        except (OSError, ValueError, KeyError, urllib.error.HTTPError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    stop(info.name)
    raise ServerError(
        f"{info.flavour} node {info.name!r} did not become healthy within {timeout:.0f}s ({last_error}). "
        f"Last log lines:\n{log_tail(info.name)}"
    )


def _check_node_name(info: NodeInfo, security: NodeSecurity | None) -> None:
    nodes = _http_json(f"{info.url}/_nodes/_local", timeout=5, security=security)["nodes"]
    if next(iter(nodes.values()))["name"] != info.name:
        stop(info.name)
        raise ServerError(
            f"port {info.http_port} is answered by another node than {info.name!r}; "
            "stop it or choose another port with --port"
        )


def _red_indices(info: NodeInfo, security: NodeSecurity | None) -> dict[str, str]:
    """The node's red indices, each with the reason its first unassigned primary gives."""
    health = _http_json(f"{info.url}/_cluster/health?level=indices", timeout=5, security=security)
    red = sorted(name for name, h in health.get("indices", {}).items() if h.get("status") == "red")
    out = {}
    for index in red:
        reason = "a primary shard is unassigned"
        try:
            shards = _http_json(f"{info.url}/_cat/shards/{index}?format=json&h=shard,prirep,state,unassigned.reason",
                                timeout=5, security=security)
            shard = next((s for s in shards if s.get("prirep") == "p" and s.get("state") == "UNASSIGNED"), None)
            if shard is not None:
                explain = _post_json(
                    f"{info.url}/_cluster/allocation/explain",
                    {"index": index, "shard": int(shard["shard"]), "primary": True},
                    security,
                )
                details = explain.get("unassigned_info", {}).get("details")
                if not details:  # e.g. an allocation filter no node matches: the deciders say which
                    deciders = [d for n in explain.get("node_allocation_decisions", []) for d in n.get("deciders", [])]
                    said = [explain.get("allocate_explanation"), *(d.get("explanation") for d in deciders[:1])]
                    details = ": ".join(x for x in said if x)
                reason = " ".join(str(details or shard.get("unassigned.reason") or reason).split())[:1000]
        except (OSError, ValueError, KeyError, urllib.error.HTTPError):
            pass
        out[index] = reason
    return out


def _post_json(url: str, body: dict, security: NodeSecurity | None) -> dict:
    headers = {"Content-Type": "application/json"}
    context = None
    if security is not None:
        import base64

        token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        context = ssl.create_default_context(cafile=security.ca_certs)
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=5, context=context) as resp:
        return json.loads(resp.read())


def stop(name: str = "default", timeout: float = 60.0) -> bool:
    """Stop a node (SIGTERM, then SIGKILL after `timeout`); False if it was not running."""
    info = read_node(name)
    if info is None or not _alive(info.pid):
        return False
    try:
        os.killpg(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(info.pid):
            return True
        _reap(info.pid)
        time.sleep(0.2)
    os.killpg(info.pid, signal.SIGKILL)
    _reap(info.pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def status(name: str = "default") -> dict:
    """Version, modules, plugins and capability flags of a running node."""
    info = read_node(name)
    if info is None:
        return {"name": name, "running": False, "reason": "never started"}
    if not _alive(info.pid):
        return {"name": name, "running": False, "flavour": info.flavour, "reason": "process not running"}
    try:
        nodes = _http_json(f"{info.url}/_nodes/_local/plugins")["nodes"]
        health = _http_json(f"{info.url}/_cluster/health")
    except (OSError, ValueError) as exc:
        return {"name": name, "running": True, "url": info.url, "healthy": False, "reason": str(exc)}
    node = next(iter(nodes.values()))
    modules = sorted(m["name"] for m in node.get("modules", []))
    plugins = {p["name"]: p["version"] for p in node.get("plugins", [])}
    return {
        "name": name,
        "running": True,
        "url": info.url,
        "flavour": info.flavour,
        "engine": info.engine,
        "version": node["version"],
        "health": health["status"],
        "pid": info.pid,
        "modules": modules,
        "plugins": plugins,
        "capabilities": server_capabilities(
            info.engine, node["version"], modules, list(plugins), _license_type(info.url) if "rank-rrf" in modules else None
        ),
    }


def server_capabilities(
    engine: str, version: str, modules: list[str], plugins: list[str], license_type: str | None = None
) -> dict[str, bool]:
    """What a node can do, computed by the engine's dialect from its modules, plugins and license (the one place
    capabilities are judged); analyzers count as present with analysis-common."""
    from ..adapters.registry import dialect_class

    dialect = dialect_class(engine)
    node = {"version": version, "modules": [{"name": m} for m in modules], "plugins": [{"name": p} for p in plugins]}
    analysis = "analysis-common" in set(modules) | set(plugins)
    caps = dialect.capabilities(node, {"english": analysis, "cjk": analysis}, license_type)
    if dialect.uses_search_pipeline:
        flags = {"english_analyzer": caps.english_analyzer, "hybrid_pipeline": caps.hybrid_query}
        return {"knn": caps.knn, **flags, "rrf_processor": caps.rrf_processor}
    return {"knn": caps.knn, "hybrid_pipeline": False, "rrf_retriever": caps.rrf_retriever}


def _license_type(url: str) -> str:
    """The node's license type ("basic" when it has no license API)."""
    try:
        return _http_json(f"{url}/_license")["license"]["type"]
    except (OSError, ValueError, KeyError):
        return "basic"
