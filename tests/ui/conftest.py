"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, and a `reme-es ui` run as a user starts it.

Chromium is `/usr/bin/chromium` (`./run test` installs it when missing); Playwright's own browser download is never
used. The flags are those a closed network and a root user need (../shared/RUNTIME.md).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("REME_ES_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "test-token-0123456789"


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium (Debian's), closed after the module: Playwright's sync API keeps its event loop running on
    the main thread while it is open, which the rest of the session's tests (asyncio.run, pytest-asyncio) must not
    meet."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (./run test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UiRun:
    """`reme-es ui` in a subprocess: its URL (with the token) once it listens; stopped by `stop`."""

    def __init__(self, args: list[str], home: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        env = {**os.environ, "REME_ES_HOME": str(home), **(env or {})}
        cmd = [sys.executable, "-m", "reme_es.cli", "ui", "--port", str(self.port), "--token", TOKEN, *args]
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise AssertionError(f"reme-es ui exited with {self.proc.returncode}")
            if m := re.search(r"(http://\S+\?token=\S+)", line):
                self.url = m[1]
                return
        raise AssertionError("reme-es ui did not print its URL in 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
