"""Which cluster a store talks to: the cluster UUID recorded when the store opens, checked again only when there
is a reason to doubt it, so a store never writes to another cluster that took over its URL.

A URL can start reaching another cluster when the node behind it stops and another node takes its port (two
managed nodes on one machine, a restart on another port). Every call paying one more request would be too dear,
so the UUID is asked for again only when the shared cluster check says so (`engine_settings.json` `cluster_check`,
the same rule and request as Memorie's): before the first request after a failed connection, after a pause longer
than `idle_s` (shorter than any node restart: requests closer together than that cannot straddle one without a
failed connection in between), and when a write finds its index missing. The UUID comes from the cluster state's
metadata, restricted to the store's own indices.

What an answer means is the shared data too (`cluster_check.answers`, `cluster_check.not_formed`): a role that may
not read the cluster state (401/403) cannot check and carries on; a retried status fails the try; any other status,
or an answer without a UUID, fails the call (ClusterChanged), except at open, where a 404 (`not_served`) or an answer
without a UUID opens the store unchecked. A store that opened on `_na_` (a cluster not formed yet) checks before
every try until it adopts the first real UUID. `check_answer` and `compare_uuid` are those rules as pure functions,
checked against the golden file Memorie's tests read too.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any, Protocol

from ..core.checks import redact_host
from ..core.engine_settings import CLUSTER_CHECK, RETRYABLE_STATUS
from ..core.errors import AuthError, ClusterChanged, ConnectionFailed, RequestFailed

log = logging.getLogger(__name__)

IDLE_RECHECK_SECONDS: float = float(CLUSTER_CHECK["idle_s"])
NOT_FORMED: str = CLUSTER_CHECK["not_formed"]["uuid"]  # the UUID a node reports before its cluster has formed
CANNOT_CHECK: frozenset[int] = frozenset(CLUSTER_CHECK["answers"]["cannot_check"])
NOT_SERVED: frozenset[int] = frozenset(CLUSTER_CHECK["answers"]["not_served"])  # at open: the store opens unchecked
CARRY_ON, RETRY, FAIL = "carry_on", "retry", "fail"  # what a check's error status means (`check_answer`)
SAME, MOVED, ADOPT = "same", "moved", "adopt"  # what a check's UUID means (`compare_uuid`)


def check_request(engine: str, indices: str) -> tuple[str, dict[str, str]]:
    """The cluster check's path and query for an engine family and the store's own index pattern (pure)."""
    endpoint = CLUSTER_CHECK["endpoint"]
    path = endpoint["path"].replace("{indices}", urllib.parse.quote(indices, safe="*,"))
    return path, {**endpoint["query"], **CLUSTER_CHECK["endpoint_query_by_engine"].get(engine, {})}


def uuid_of(answer: Any) -> str | None:
    """The UUID in a cluster check's answer (`_na_` included), or None when it tells none."""
    node = answer
    for key in CLUSTER_CHECK["endpoint"]["uuid_field"].split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, str) and node else None


def check_answer(status: int | None) -> str:
    """What a check answered with an error status means (`cluster_check.answers`): CARRY_ON (the role may not read
    the cluster state: the store cannot tell, and goes on), RETRY (the try failed) or FAIL (the call fails)."""
    if status in CANNOT_CHECK:
        return CARRY_ON
    return RETRY if status in RETRYABLE_STATUS else FAIL


def compare_uuid(recorded: str, answered: str | None) -> str:
    """What a check's UUID means for the recorded one (`cluster_check.not_formed`, `moved`, `answers.no_uuid`): SAME,
    MOVED (another cluster, or an answer without a UUID), or ADOPT (the store opened on `_na_` and this is the first
    real UUID)."""
    if answered is None:
        return MOVED
    if answered == NOT_FORMED or answered == recorded:
        return SAME
    return ADOPT if recorded == NOT_FORMED else MOVED


class _Asks(Protocol):
    """What the check needs of its port (`IndexPort`): the request, the hosts it names, the dialect and transport. A
    protocol, not the class, so this module does not import the port that imports it."""

    transport: Any
    dialect: Any

    @property
    def hosts(self) -> Sequence[str]: ...

    async def cluster_answer(self, indices: str, once: bool = False) -> Any: ...


class ClusterIdentity:
    """The cluster UUID one port's store opened on, and the check that its hosts still reach that cluster: the guard
    of the port's transport (`Transport.guarded`), asking through the port (`IndexPort.cluster_answer`)."""

    def __init__(self, port: _Asks):
        self.port = port
        # None: not recorded (not connected, the server does not tell, or the role may not ask): no check;
        # `_na_`: opened before the cluster formed, checked before every try until a real UUID is adopted
        self.uuid: str | None = None
        self.indices = "*"  # the store's own index pattern (`record`), which keeps the check's answer small
        self._doubt = False
        self._last = 0.0

    def _now(self) -> float:
        """The transport's clock (the one its retries see), or the monotonic clock for a transport without one."""
        clock = getattr(self.port.transport, "clock", None)
        return clock.now() if clock is not None else time.monotonic()

    async def _fetch(self, once: bool = False) -> tuple[bool, str | None]:
        """Whether the check could ask (False: a status that means carry on), and the cluster UUID the hosts answer
        with now (`_na_` included; None: the answer holds none); `once`: one try (the transport's retry loop around it
        decides about another). Any other failure is raised."""
        try:
            return True, uuid_of(await self.port.cluster_answer(self.indices, once))
        except (AuthError, RequestFailed) as exc:
            if check_answer(exc.status) != CARRY_ON:
                raise
            log.debug("cluster check refused (%s): the role may not read the cluster state; going on", exc.status)
            return False, None

    async def record(self, indices: str | None = None) -> None:
        """Record the UUID of the cluster the hosts reach now (at connect; `indices`: the store's index pattern), and
        have the port's transport check it before its tries from now on (no check while `uuid` is None)."""
        if not self.port.dialect.cluster_identity:
            return
        self.indices = indices or self.indices
        self.uuid = None  # the port checks nothing until a UUID is recorded (its request goes past the check anyway)
        try:
            self.uuid = (await self._fetch())[1]  # None: the server does not tell its cluster (`answers.no_uuid`)
        except RequestFailed as exc:
            if exc.status not in NOT_SERVED:
                raise
            log.info("the cluster state is not served here (HTTP %s): the store's cluster is not checked", exc.status)
            self.uuid = None  # a server that serves no cluster state: nothing to compare with
        self._doubt, self._last = False, self._now()

    async def before_try(self, connection_failed: bool) -> None:
        """Before a try of a request or bulk round: check the cluster where due (the last try's connection failed,
        an idle pause, a doubt); raises ClusterChanged, or the check's own failure (the try then failed)."""
        if connection_failed:
            self._doubt = True
        await self.verify()

    def doubt(self) -> None:
        """A connection failed: check the cluster before the next request."""
        self._doubt = True

    def seen(self) -> None:
        """A request was answered (by the recorded cluster, as checked when in doubt)."""
        self._last = self._now()

    async def verify(self, force: bool = False) -> None:
        """Raise ClusterChanged when the hosts now reach another cluster; asks only when due (or `force`; always
        while the recorded UUID is `_na_`), with one try (a failed check raises its error, and the check stays due).
        The first real UUID after `_na_` is adopted."""
        if self.uuid is None:
            return
        now = self._now()
        if not (force or self._doubt or self.uuid == NOT_FORMED or now - self._last >= IDLE_RECHECK_SECONDS):
            return
        self._last = now  # concurrent calls after a pause do not all ask
        hosts = ", ".join(redact_host(h) for h in self.port.hosts)
        try:
            asked, current = await self._fetch(once=True)
        except (ConnectionFailed, RequestFailed) as exc:
            self._doubt = True  # no answer that tells: the check stays due
            if isinstance(exc, RequestFailed) and check_answer(exc.status) == FAIL:
                raise ClusterChanged(
                    f"{hosts} now answers the cluster check with HTTP {exc.status}, not as the cluster this store "
                    f"opened (uuid {self.uuid}): another server took its URL?; nothing was sent to it. Point the hosts "
                    "at the cluster that holds the indices (`reme-es server status` shows a managed node's URL)"
                ) from exc
            raise
        verdict = compare_uuid(self.uuid, current) if asked else SAME
        if verdict == MOVED:
            self._doubt = True
            reached = "a server that tells no cluster UUID" if current is None else f"another cluster (uuid {current})"
            raise ClusterChanged(
                f"{hosts} now reaches {reached}, not the cluster this store opened (uuid "
                f"{self.uuid}), e.g. a restarted node lost its port to another node; nothing was sent to it. Point "
                "the hosts at the cluster that holds the indices (`reme-es server status` shows a managed node's "
                "URL), or open the store again to use this cluster"
            )
        if verdict == ADOPT:
            log.info("the cluster has formed: uuid %s (the store opened while it reported %s)", current, NOT_FORMED)
            self.uuid = current
        self._doubt = False
