"""`reme-es metrics`: Prometheus text on `/metrics` (`reme_es.core.prometheus`): this process's metrics and, read at
each scrape, the memory server's own state as `reme-es doctor` sees it (every check's state, documents and deleted
documents per index, the k-NN calibration's recall and age, chunks without vectors, shards and their limit, the last
snapshot's age)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .app import _client, _run, _settings, common

if TYPE_CHECKING:
    from ..core.options import Options
    from ..store.doctor import Facts

STATES = ("ok", "warn", "fail")


def samples(facts: Facts) -> list[tuple[str, str, dict[str, str], float]]:
    """(name, help, labels, value) of each gauge the facts give (the doctor's checks included)."""
    from ..store.doctor import run_checks

    out = []
    for check in run_checks(facts):
        for state in STATES:
            labels = {"check": check.name, "state": state}
            out.append(
                (
                    "reme_es_doctor_check",
                    "1 for the state each doctor check is in",
                    labels,
                    float(check.status == state),
                )
            )
    out += _index_samples(facts)
    c = facts.cluster
    shards, limit = float(c.active_shards + c.unassigned_shards), float(c.max_shards_per_node * max(1, c.data_nodes))
    out.append(("reme_es_cluster_shards", "Active and unassigned shards of the cluster", {}, shards))
    out.append(("reme_es_cluster_shard_limit", "max_shards_per_node times the data nodes", {}, limit))
    for shot in facts.snapshots:
        if shot.start is not None:
            age = (dt.datetime.now(dt.UTC) - shot.start).total_seconds()
            out.append(
                (
                    "reme_es_snapshot_age_seconds",
                    "Seconds since the last snapshot of these indices started",
                    {"repository": shot.repository},
                    age,
                )
            )
    return out


def _index_samples(facts: Facts) -> list[tuple[str, str, dict[str, str], float]]:
    """Documents, deleted documents, chunks without a vector and the k-NN calibration of each index."""
    from ..store.calibration import Calibration
    from ..store.doctor import set_of

    out = []
    for i in facts.indices:
        labels = {"index": i.name, "set": set_of(i), "kind": i.kind}
        out.append(("reme_es_index_docs", "Documents of the index's primaries", labels, float(i.docs)))
        deleted = float(i.deleted)
        out.append(("reme_es_index_deleted_docs", "Deleted documents of the index's primaries", labels, deleted))
        if i.with_vectors is not None:
            missing = float(i.docs - i.with_vectors)
            out.append(("reme_es_chunks_without_vector", "Chunks of the index without a vector", labels, missing))
        if (record := Calibration.from_meta(i.meta)) is not None:
            text = "Recall@10 the recorded k-NN width reached"
            out.append(("reme_es_knn_calibration_recall", text, labels, record.recall))
            measured = dt.datetime.fromisoformat(record.measured_at)
            age = (dt.datetime.now(dt.UTC) - measured).total_seconds() if measured.tzinfo else 0.0
            text = "Seconds since the k-NN width was measured"
            out.append(("reme_es_knn_calibration_age_seconds", text, labels, age))
    return out


class ClusterCollector:
    """A prometheus_client collector reading the doctor's facts at each scrape."""

    def __init__(self, read_facts):
        self.read_facts = read_facts

    def describe(self) -> list:
        return []  # no fixed metrics: the registry does not read the cluster when this collector is added

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        families: dict[str, Any] = {}
        for name, text, labels, value in samples(asyncio.run(self.read_facts())):
            family = families.get(name) or families.setdefault(name, GaugeMetricFamily(name, text, labels=list(labels)))
            family.add_metric(list(labels.values()), value)
        yield from families.values()


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=9464, show_default=True, help="HTTP port of /metrics.")
@click.option("--address", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--once", is_flag=True, help="Print the metrics text once and exit (no server).")
@common(with_workspace=False)
@click.option("-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), help="Folder of reme-es.yaml.")
def metrics(port, address, once, workspace, config_file, **flags):
    """Serve Prometheus metrics on /metrics: this process's and the memory server's state (doctor's figures)."""
    _run(lambda: _metrics(_settings(workspace, config_file, **flags), port, address, once))


async def _metrics(settings: Options, port: int, address: str, once: bool) -> int:
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from ..core import prometheus
    from ..store.connect import open_cluster
    from ..store.doctor import gather

    named = settings.index.index_prefix
    cs, engine = await _client(settings)

    async def read_facts() -> Facts:
        cluster = await open_cluster(cs, engine)
        try:
            return await gather(cluster.port, named)
        finally:
            await cluster.close()

    registry = prometheus.enable()
    registry.register(ClusterCollector(read_facts))
    if once:
        click.echo(await asyncio.to_thread(prometheus.text, registry), nl=False)
        return 0

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base class's name)
            pass

    server = make_server(address, port, prometheus.wsgi_app(registry), handler_class=Quiet)
    click.echo(f"serving Prometheus metrics on http://{address}:{port}/metrics (Ctrl-C stops)", err=True)
    try:
        await asyncio.to_thread(server.serve_forever)
    finally:
        server.server_close()
    return 0
