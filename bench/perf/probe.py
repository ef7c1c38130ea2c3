"""Where a call's time goes: a probe on the store's own client (opensearch-py or elasticsearch-py) that records, per
request, when it went on the wire and came back, what the server says it spent (`took`), and the client's JSON
encoding and decoding. bench/perf/search_cost.py uses it (its breakdown, fusion and raw meters); reme_es/ does not.

A call (one store or ReMe call, possibly several requests, possibly concurrent) is split into parts that add up to
its wall time:

  build     from the call's start until its first request goes on the wire (query building, JSON encoding, the
            client library's request handling)
  between   client time between requests of one call (a second round trip's building, fusion between them)
  wire      requests in flight, less the server's `took` (HTTP, the node's own request handling outside the search)
  took      the server's `took` (for concurrent requests, the longest of those in flight together)
  parse     from the last answer until the call returns (JSON decoding, hits into models, ReMe's answer)
`dumps` and `loads` are the JSON encoding and decoding inside those parts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    start: float
    end: float = 0.0
    took_ms: float = 0.0


@dataclass
class Call:
    """What one call spent (ms), from the probe's records between `begin` and `end`."""

    wall: float = 0.0
    trips: int = 0
    build: float = 0.0
    between: float = 0.0
    wire: float = 0.0
    took: float = 0.0
    parse: float = 0.0
    dumps: float = 0.0
    loads: float = 0.0

    @property
    def overhead(self) -> float:
        """Everything but the server's `took`: what the client and the wire add."""
        return self.wall - self.took


@dataclass
class Probe:
    """Wraps one engine client's connections and serializer; `begin`/`end` bracket a call."""

    requests: list[Request] = field(default_factory=list)
    dumps_s: float = 0.0
    loads_s: float = 0.0
    t0: float = 0.0

    # ------------------------------------------------------------------ install
    def install(self, client: Any) -> Probe:
        """Patch `client` (AsyncOpenSearch or AsyncElasticsearch) in place; returns self."""
        transport = client.transport
        if hasattr(transport, "connection_pool"):  # opensearch-py
            conns = list(getattr(transport.connection_pool, "connections", [])) or [transport.get_connection()]
            for conn in conns:
                self._wrap_send(conn, lambda answer: answer[2])
            serializer = transport.serializer
            self._wrap_codec(serializer)
        else:  # elastic-transport
            for node in transport.node_pool.all():
                self._wrap_send(node, lambda answer: answer[1])
            self._wrap_codec(transport.serializers)
        return self

    def _wrap_send(self, conn: Any, body_of) -> None:
        send = conn.perform_request
        probe = self

        async def timed(*args, **kwargs):
            rec = Request(time.perf_counter())
            probe.requests.append(rec)
            answer = await send(*args, **kwargs)
            rec.end = time.perf_counter()
            rec.took_ms = _took(body_of(answer))
            return answer

        conn.perform_request = timed

    def _wrap_codec(self, codec: Any) -> None:
        dumps, loads = codec.dumps, codec.loads
        probe = self

        def timed_dumps(*args, **kwargs):
            t = time.perf_counter()
            try:
                return dumps(*args, **kwargs)
            finally:
                probe.dumps_s += time.perf_counter() - t

        def timed_loads(*args, **kwargs):
            t = time.perf_counter()
            try:
                return loads(*args, **kwargs)
            finally:
                probe.loads_s += time.perf_counter() - t

        codec.dumps, codec.loads = timed_dumps, timed_loads

    # ------------------------------------------------------------------ calls
    def begin(self) -> None:
        self.requests.clear()
        self.dumps_s = self.loads_s = 0.0
        self.t0 = time.perf_counter()

    def end(self) -> Call:
        t1 = time.perf_counter()
        reqs = sorted(self.requests, key=lambda r: r.start)
        call = Call(wall=(t1 - self.t0) * 1e3, trips=len(reqs), dumps=self.dumps_s * 1e3, loads=self.loads_s * 1e3)
        if not reqs:
            call.parse = call.wall
            return call
        groups = _overlapping(reqs)
        flight = sum(g[-1] - g[0] for g, _ in groups)
        call.took = sum(took for _, took in groups)
        call.build = (reqs[0].start - self.t0) * 1e3
        call.parse = (t1 - groups[-1][0][-1]) * 1e3
        call.between = sum(groups[i + 1][0][0] - groups[i][0][-1] for i in range(len(groups) - 1)) * 1e3
        call.wire = flight * 1e3 - call.took
        return call


def _took(raw: Any) -> float:
    """The `took` (ms) of a raw answer without decoding it all: `took` comes first in a search answer."""
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw[:64]).decode("utf-8", "replace")
    if not isinstance(raw, str):
        return 0.0
    head = raw[:64]
    at = head.find('"took":')
    if at < 0:
        return 0.0
    digits = ""
    for ch in head[at + 7 :]:
        if ch.isdigit():
            digits += ch
        elif digits:
            break
    return float(digits or 0)


def _overlapping(reqs: list[Request]) -> list[tuple[list[float], float]]:
    """Requests merged where in flight together: ([start, end], the longest `took` among them) per group."""
    out: list[tuple[list[float], float]] = []
    for r in reqs:
        if out and r.start <= out[-1][0][1]:
            span, took = out[-1]
            out[-1] = ([span[0], max(span[1], r.end)], max(took, r.took_ms))
        else:
            out.append(([r.start, r.end], r.took_ms))
    return out
