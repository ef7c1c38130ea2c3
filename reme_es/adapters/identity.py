"""Which cluster a store talks to: the cluster UUID recorded when the store opens, checked again only when there
is a reason to doubt it, so a store never writes to another cluster that took over its URL.

A URL can start reaching another cluster when the node behind it stops and another node takes its port (two
managed nodes on one machine, a restart on another port). Every call paying one more request would be too dear,
so the UUID is asked for again only before the first request after a failed connection, after a pause longer than
`IDLE_RECHECK_SECONDS` (shorter than any node restart: requests closer together than that cannot straddle one
without a failed connection in between), and when a write finds its index missing. The UUID comes from `GET /`,
or from the cluster state's metadata where `GET /` is not served (the Elasticsearch integ-test node).
"""

from __future__ import annotations

import time
from typing import Any

from ..core.checks import redact_host
from ..core.errors import AuthError, ClusterChanged, ConnectionFailed, RequestFailed

IDLE_RECHECK_SECONDS = 10.0
_STATE_PARAMS = {"filter_path": "metadata.cluster_uuid"}


class ClusterIdentity:
    """The cluster UUID one dialect's store opened on, and the check that its hosts still reach that cluster."""

    def __init__(self, dialect: Any):
        self.dialect = dialect
        self.uuid: str | None = None  # None: not recorded (not connected, or the server does not tell)
        self._doubt = False
        self._last = 0.0

    async def _fetch(self) -> str | None:
        """The cluster UUID the hosts answer with now (None when the server does not tell, or the role may not ask)."""
        try:
            return (await self.dialect.request("GET", "/"))["cluster_uuid"]
        except (RequestFailed, KeyError, TypeError):
            pass  # the Elasticsearch integ-test node answers `GET /` with 405
        except AuthError:
            return None
        try:
            state = await self.dialect.request("GET", "/_cluster/state/metadata", None, _STATE_PARAMS)
            return state["metadata"]["cluster_uuid"]
        except (RequestFailed, AuthError, KeyError, TypeError):
            return None

    async def record(self) -> None:
        """Record the UUID of the cluster the hosts reach now (at connect)."""
        if not self.dialect.cluster_identity:
            return
        self.uuid = await self._fetch()
        self._doubt, self._last = False, time.monotonic()

    def doubt(self) -> None:
        """A connection failed: check the cluster before the next request."""
        self._doubt = True

    def seen(self) -> None:
        """A request was answered (by the recorded cluster, as checked when in doubt)."""
        self._last = time.monotonic()

    async def verify(self, force: bool = False) -> None:
        """Raise ClusterChanged when the hosts now reach another cluster; asks only when in doubt (or `force`)."""
        if self.uuid is None:
            return
        now = time.monotonic()
        if not (force or self._doubt or now - self._last > IDLE_RECHECK_SECONDS):
            return
        self._last = now  # concurrent calls after a pause do not all ask
        try:
            current = await self._fetch()
        except ConnectionFailed:
            self._doubt = True
            raise
        if current is not None and current != self.uuid:
            self._doubt = True
            hosts = ", ".join(redact_host(h) for h in self.dialect.settings.hosts)
            raise ClusterChanged(
                f"{hosts} now reaches another cluster (uuid {current}) than the one this store opened (uuid "
                f"{self.uuid}), e.g. a restarted node lost its port to another node; nothing was sent to it. Point "
                "the hosts at the cluster that holds the indices (`reme-es server status` shows a managed node's "
                "URL), or open the store again to use this cluster"
            )
        self._doubt = False
