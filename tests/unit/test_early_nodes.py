"""The background starts of dedicated test nodes (tests/containers/early.py), with a stand-in context manager for a
node (real holder processes, no server): planned from the item order, each once, skipped items left out; started
in holder processes with the environment of the plan; taken, waited for, started in the foreground when not begun;
failures raised in the fixture; stopped at fixture end, and untaken ones at the session's end."""

from __future__ import annotations

import os
import threading
import time
import types
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.containers import early


@contextmanager
def fake_node(log: str, key: str, mode: str = "ok"):
    """A stand-in node: logs `start <key> <pid>` and `stop <key>`; yields (key, its REME_ES_HOME). Mode `gate`
    waits for `<log>.gate` before starting, `fail` raises instead."""
    if mode == "gate":
        deadline = time.monotonic() + 20
        while not Path(log + ".gate").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    if mode == "fail":
        raise RuntimeError(f"{key} did not start")
    with open(log, "a") as fh:
        fh.write(f"start {key} {os.getpid()}\n")
    try:
        yield key, os.environ.get("REME_ES_HOME")
    finally:
        with open(log, "a") as fh:
            fh.write(f"stop {key}\n")


class Item:
    """What the planner reads of a pytest item."""

    def __init__(self, module: str, fixtures: list[str], marks: tuple = ()):
        self.module = types.SimpleNamespace(__name__=module)
        self.fixturenames = fixtures
        self._marks = marks

    def iter_markers(self):
        return iter(self._marks)


class Log:
    def __init__(self, path: Path):
        self.path = str(path)

    def call(self, key: str, mode: str = "ok") -> early.Call:
        return early.Call(__name__, "fake_node", (self.path, key, mode))

    def events(self) -> list[str]:
        """The events, with 'ahead' for a start in another process and 'here' for one in this one."""
        if not os.path.exists(self.path):
            return []
        out = []
        for line in Path(self.path).read_text().splitlines():
            parts = line.split()
            out.append(
                line
                if parts[0] == "stop"
                else f"start {parts[1]} " + ("here" if int(parts[2]) == os.getpid() else "ahead")
            )
        return out

    def wait_for(self, n: int) -> None:
        deadline = time.monotonic() + 30
        while len(self.events()) < n and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture
def log(monkeypatch, tmp_path):
    monkeypatch.setattr(early, "_NEEDS", {})
    monkeypatch.delenv("REME_ES_TEST_EARLY_NODES", raising=False)
    monkeypatch.setenv("REME_ES_HOME", "/home/of/the/plan")
    record = Log(tmp_path / "events.log")
    early.needs("mod_a", "cluster", lambda item: ("cluster", record.call("cluster")))
    pool = lambda item: f"pool-{item.fixturenames[-1]}"  # noqa: E731
    early.needs("mod_b", "pool", lambda item: (pool(item), record.call(pool(item))))
    early.needs("mod_c", "broken", lambda item: ("broken", record.call("broken", "fail")))
    early.needs("mod_d", "slow", lambda item: ("slow", record.call("slow", "gate")))
    return record


def test_needed_nodes_start_ahead_once_each_in_item_order_and_skipped_items_need_none(log):
    runs = early.EarlyNodes()
    skip = types.SimpleNamespace(name="skipif", args=(True,))
    items = [
        Item("mod_b", ["server", "pool", "os"]),
        Item("mod_x", ["cluster"]),  # another module's fixture of that name: no node
        Item("mod_a", ["cluster"]),
        Item("mod_b", ["server", "pool", "es"], marks=(skip,)),
        Item("mod_a", ["cluster"]),
        Item("mod_b", ["server", "pool", "es2"]),
    ]
    try:
        assert runs.plan(items) == ["pool-os", "cluster", "pool-es2"]
        log.wait_for(3)
    finally:
        runs.close()  # stops the three: no test took them
    assert log.events() == [
        "start pool-os ahead",
        "start cluster ahead",
        "start pool-es2 ahead",
        "stop pool-os",
        "stop cluster",
        "stop pool-es2",
    ]


def test_a_taken_node_is_the_one_started_ahead_with_the_plan_s_environment_and_stops_with_the_fixture(log, monkeypatch):
    runs = early.EarlyNodes()
    runs.plan([Item("mod_a", ["cluster"])])
    monkeypatch.setenv("REME_ES_HOME", "/a/test/s/own/home")  # what CliRunner does during an invoke
    with runs.take("cluster", log.call("cluster")) as value:
        assert value == ("cluster", "/home/of/the/plan")
        assert log.events() == ["start cluster ahead"]
    assert log.events() == ["start cluster ahead", "stop cluster"]
    runs.close()
    assert log.events() == ["start cluster ahead", "stop cluster"]  # not stopped twice


def test_a_start_not_begun_is_run_by_the_fixture_itself(log):
    runs = early.EarlyNodes()
    runs.plan([Item("mod_d", ["slow"]), Item("mod_a", ["cluster"])])  # the holder waits in the first start
    with runs.take("cluster", log.call("cluster")) as value:
        assert value == ("cluster", "/home/of/the/plan")
    Path(log.path + ".gate").touch()
    runs.close()
    assert log.events() == ["start cluster here", "stop cluster", "start slow ahead", "stop slow"]


def test_a_failed_start_fails_the_fixture_that_takes_it(log):
    runs = early.EarlyNodes()
    runs.plan([Item("mod_c", ["broken"])])
    with pytest.raises(RuntimeError, match=r"(?s)starting .*broken.* ahead failed \(exit 1\).*broken did not start"):
        with runs.take("broken", log.call("broken", "fail")):
            pass
    runs.close()
    assert log.events() == []


def test_an_error_inside_the_fixture_still_stops_the_node(log):
    runs = early.EarlyNodes()
    runs.plan([Item("mod_a", ["cluster"])])
    with pytest.raises(KeyError):
        with runs.take("cluster", log.call("cluster")):
            raise KeyError("test failed")
    runs.close()
    assert log.events() == ["start cluster ahead", "stop cluster"]


def test_at_the_end_starts_not_begun_are_dropped(log):
    runs = early.EarlyNodes()
    runs.plan([Item("mod_d", ["slow"]), Item("mod_a", ["cluster"])])
    threading.Timer(0.5, Path(log.path + ".gate").touch).start()  # the slow start ends while close() runs
    runs.close()  # waits for the start under way, stops it; the cluster never starts
    assert log.events() == ["start slow ahead", "stop slow"]


def test_turned_off_nothing_starts_ahead(log, monkeypatch):
    monkeypatch.setenv("REME_ES_TEST_EARLY_NODES", "0")
    runs = early.EarlyNodes()
    assert runs.plan([Item("mod_a", ["cluster"])]) == []
    with runs.take("cluster", log.call("cluster")):
        pass
    runs.close()
    assert log.events() == ["start cluster here", "stop cluster"]
