"""The node's process: free ports, the unprivileged run user, launching, liveness, reaping."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
from pathlib import Path

from ..core.errors import ServerError

RUN_USER = "reme-es"
PRIVATE = "secret"  # a node folder's own secrets (a secured node's admin password): never the run user's


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


def _keep_private(folder: Path) -> None:
    """`folder` (if any) back to the caller, 0700, its files 0600 except the CA certificate (clients read it)."""
    if not folder.is_dir():
        return
    for path in [folder, *folder.iterdir()]:
        os.chown(path, os.geteuid(), os.getegid())
        path.chmod(0o700 if path.is_dir() else 0o644 if path.name == "ca.crt" else 0o600)


def _launch(command: list[str], folder: Path, home: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start the node in its own session from `folder`, output to stdout.log; as root, as the run user."""
    user = _run_user()
    if user is not None:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(folder)], check=True)
        _make_traversable(home.parent)
        _make_traversable(folder)
        _keep_private(folder / PRIVATE)
        for key in (folder / "config" / "certs").glob("*.key"):  # a secured node's TLS key: its run user's alone
            key.chmod(0o600)
    stdout = (folder / "stdout.log").open("wb")
    try:
        return subprocess.Popen(
            command,
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


def _alive(pid: int) -> bool:
    """Whether process `pid` runs. A recorded pid can outlive its process and be reused by a thread of another one
    (`kill(pid, 0)` reaches threads too): a pid that is a thread, not a process, counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/status") as fh:
            status = dict(line.split(":", 1) for line in fh if ":" in line)
    except OSError:
        return True
    if status.get("Tgid", "").strip() not in ("", str(pid)):
        return False  # a thread of another process
    return not status.get("State", "").strip().startswith("Z")  # a zombie child of ours counts as dead


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
