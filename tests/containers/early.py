"""Dedicated nodes started in the background ahead of the tests that need them.

Some tests need nodes of their own (the three-node cluster, the secured nodes, the backpressure nodes, the k-NN
guard's node). Started by their fixtures, each start was wall time the session waited through, one after another.
Here a test module registers, per fixture, which node an item using that fixture needs: a key and a `Call`, a
module-level context manager function (with string arguments) that starts the node, yields what the fixture yields
(picklable) and stops the node at exit. Once collection is final, one background thread starts the needed nodes one
at a time, in the order the tests will need them, while the other tests run. The fixture then takes its node,
waiting if the start is still under way, and stops it when the fixture ends, as before. A start that has not begun
when its fixture asks is run by the fixture itself; a start that failed fails the fixture with its error. Nodes no
test took are stopped at the session's end.

Each start ahead runs in a holder process of its own (`python -m tests.containers.early`) with the environment the
session had when collection ended: tests change `os.environ` while they run (click's CliRunner sets `REME_ES_HOME`
for an invoke, the k-NN guard test points it at a private home), and the launcher reads it throughout a start. The
holder enters the context manager, sends back what it yielded, and exits it when told to stop, or when the session
goes away (its stdin closes), so a killed session leaves no node of these behind.

`REME_ES_TEST_EARLY_NODES=0` turns the background starts off (each fixture starts its node itself).
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]  # the checkout: where `tests` imports from
READY = "early-node-ready "


class Call(NamedTuple):
    """A context manager function by module and name, with string arguments: what starts (and stops) one node."""

    module: str
    function: str
    args: tuple[str, ...] = ()

    def manager(self):
        """The context manager this call makes."""
        return getattr(importlib.import_module(self.module), self.function)(*self.args)


Which = Callable[[Any], "tuple[str, Call] | None"]
# (test module, fixture name) -> item -> (key, call) of the node an item of that module using that fixture needs
_NEEDS: dict[tuple[str, str], Which] = {}


def needs(module: str, fixture: str, which: Which) -> None:
    """Register the dedicated node an item of test module `module` using `fixture` needs: `which(item)` -> (key,
    call), or None for no node."""
    _NEEDS[(module, fixture)] = which


def _skipped(item) -> bool:
    """An item marked skip, or skipif with a condition given as a true value (no node is started for it)."""
    for mark in item.iter_markers():
        if mark.name == "skip" or (mark.name == "skipif" and mark.args and all(a is True for a in mark.args)):
            return True
    return False


class Holder:
    """A holder process that started one node: what the call yielded, and how to stop it."""

    def __init__(self, call: Call, env: dict[str, str]) -> None:
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.containers.early"],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
        )
        self.proc.stdin.write(json.dumps(call._asdict()) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(READY):
                self.value = pickle.loads(base64.b64decode(line[len(READY) :]))
                return
        self.proc.wait()
        raise RuntimeError(f"starting {call} ahead failed (exit {self.proc.returncode}):\n{self._stderr()}")

    def _stderr(self) -> str:
        """The holder's stderr: the traceback's end (the error) after its start, with the middle cut."""
        self._err.seek(0)
        text = self._err.read().decode(errors="replace")
        return text if len(text) <= 8000 else f"{text[:3000]}\n[...]\n{text[-5000:]}"

    def stop(self, timeout: float = 300.0) -> None:
        """Exit the call's context manager (the node stops) and wait for the holder to end."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._err.close()
        if self.proc.returncode != 0:
            log.warning("a holder of a node started ahead exited %s", self.proc.returncode)


class EarlyNodes:
    """The background starts of one session: planned from the final item order, taken by the fixtures."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._pool: ThreadPoolExecutor | None = None

    def plan(self, items: list) -> list[str]:
        """Start, in the background and one at a time, each node the items need, in the items' order."""
        if os.environ.get("REME_ES_TEST_EARLY_NODES", "1") == "0" or not _NEEDS:
            return []
        planned: dict[str, Call] = {}
        for item in items:
            if _skipped(item):
                continue
            for fixture in item.fixturenames:
                module = getattr(item, "module", None)
                which = _NEEDS.get((module.__name__, fixture)) if module else None
                if which and (need := which(item)) and need[0] not in planned:
                    planned[need[0]] = need[1]
        if planned:
            env = dict(os.environ)  # as the session has it now: tests change it later
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="early-node")
            with self._lock:
                for key, call in planned.items():
                    self._futures[key] = self._pool.submit(Holder, call, env)
        return list(planned)

    @contextmanager
    def take(self, key: str, call: Call) -> Iterator[Any]:
        """What node `key` yields: the one started ahead if planned (else started now, by `call`); stopped at exit."""
        with self._lock:
            future = self._futures.pop(key, None)
        if future is None or future.cancel():  # not planned, or not begun yet: start it here
            with call.manager() as value:
                yield value
            return
        holder = future.result()  # waits for a start under way; raises the error of a failed one
        try:
            yield holder.value
        finally:
            holder.stop()

    def close(self) -> None:
        """Stop what was started ahead and never taken (a deselected or failed run), after any start under way."""
        with self._lock:
            futures, self._futures = list(self._futures.values()), {}
        begun = [future for future in futures if not future.cancel()]  # cancel every pending start first
        for future in begun:
            try:
                future.result().stop()
            except Exception:  # noqa: BLE001 - a failed start cleaned up after itself; stop the others
                log.exception("a node started ahead did not start or stop cleanly")
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


EARLY = EarlyNodes()


def _hold() -> int:
    """The holder process: enter the call read from stdin, print what it yielded, exit it when stdin closes."""
    call = Call(**{k: tuple(v) if k == "args" else v for k, v in json.loads(sys.stdin.readline()).items()})
    try:
        with call.manager() as value:
            print(READY + base64.b64encode(pickle.dumps(value)).decode(), flush=True)
            sys.stdin.read()  # until the session says stop (closes our stdin) or goes away
    except BaseException:  # noqa: BLE001 - reported to the session through stderr and the exit status
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_hold())
