"""Transport: one engine client behind `request` and `bulk`, with every client exception mapped in one place.

An engine module subclasses `Transport` and says how its client is made and called, and what a client
exception holds (`error_info`). Everything else is shared: the mapping to the `ReMeESError` tree by HTTP
status, error `type` and the exception's class (never by matching words in its text), and the retries: every
request and every bulk item under the shared policy (`engine_settings.json` `retry`, applied by `.retry`).
"""

from __future__ import annotations

import copy
import logging
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from ..core.checks import redact_host, validate_hosts
from ..core.engine_settings import RETRYABLE_STATUS, SETTINGS  # noqa: F401  (RETRYABLE_STATUS: re-exported)
from ..core.errors import (
    BulkError,
    BulkItemFailure,
    ClusterChanged,
    ConfigError,
    ConnectionFailed,
    ReMeESError,
)
from ..core.options import DEFAULT_AWS_SERVICE, ConnectionOptions
from .error_map import INDEX_NOT_FOUND, ErrorInfo, error_from_info
from .retry import BULK, REQUEST, Attempt, Clock, RetryPolicy, bulk_try_timeout, in_rounds, unanswered
from .traced import EngineRequest, server_of

log = logging.getLogger(__name__)

AWS_SERVICES = ("es", "aoss")
# One bulk request carries at most this many bytes (and 2,000 actions); the writer sends two streams at once, which
# keeps its bulk bodies well inside a small heap's indexing-pressure limit (docs/decisions.md).
BULK_REQUEST_BYTES = 4 << 20


@dataclass
class ClientSettings:
    """Connection settings; secrets are kept out of repr and never logged."""

    hosts: list[str]
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    verify_certs: bool = True
    ca_certs: str | None = None
    client_cert: str | None = None
    client_key: str | None = field(default=None, repr=False)
    timeout: float = float(SETTINGS["retry"]["request"]["try_timeout_s"])  # one try of a request, in seconds
    max_retries: int | None = None  # retries of a request after its first try; None: the shared policy's
    aws_region: str | None = None  # set: sign requests with AWS SigV4 (credentials from botocore's default chain)
    aws_service: str = DEFAULT_AWS_SERVICE  # "es": Amazon OpenSearch Service, "aoss": OpenSearch Serverless

    @classmethod
    def from_options(cls, connection: ConnectionOptions, hosts: list[str] | None = None) -> ClientSettings:
        """The client settings of a connection's options (`hosts`: instead of the options' own); secrets are
        unwrapped only here."""
        return cls(
            hosts=connection.hosts if hosts is None else hosts,
            username=connection.username,
            password=connection.secret("password"),
            api_key=connection.secret("api_key"),
            verify_certs=connection.verify_certs,
            ca_certs=connection.ca_certs,
            timeout=connection.timeout,
            aws_region=connection.aws_region,
            aws_service=connection.aws_service,
        )

    def __post_init__(self) -> None:
        self.hosts = validate_hosts(self.hosts)  # http:// and https:// only, whoever builds the settings
        if not self.aws_region:
            return
        if self.aws_service not in AWS_SERVICES:
            raise ConfigError(f"aws_service must be one of {', '.join(AWS_SERVICES)}, got {self.aws_service!r}")
        if self.username is not None or self.password or self.api_key:
            raise ConfigError(
                "aws_region signs requests with AWS SigV4; remove username/password and api_key "
                "(one authentication method at a time)"
            )

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["hosts"] = [redact_host(h) for h in self.hosts]
        return f"ClientSettings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


@dataclass
class BulkOutcome:
    """Result of a bulk write: how many items succeeded and which failed (id, status, reason)."""

    succeeded: int = 0
    failures: list[BulkItemFailure] = field(default_factory=list)
    # (index as given in the action, id) -> (_seq_no, _primary_term) of every document this bulk wrote
    versions: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def raise_for_failures(self) -> None:
        """Raise BulkError listing every failed item, if any."""
        if self.failures:
            raise BulkError(self.failures, self.succeeded)

    def missing_indices(self) -> list[str]:
        """The indices items failed for because they do not exist (sorted)."""
        return sorted({f.index for f in self.failures if f.type == INDEX_NOT_FOUND})


@dataclass
class Sent:
    """One request as it was answered, for a caller that asked to see its requests (`SENT`): what was sent, the
    answer, and the wall time in milliseconds over all its tries."""

    method: str
    path: str
    body: Any
    answer: Any
    ms: float

    @property
    def took(self) -> list[int]:
        """The server's own `took` (milliseconds) of the answer, one per search of an `_msearch`."""
        if not isinstance(self.answer, dict):
            return []
        if "responses" in self.answer:
            return [int(r.get("took", 0)) for r in self.answer["responses"] if isinstance(r, dict)]
        return [int(self.answer["took"])] if "took" in self.answer else []


# Set to a list, every request answered in that context is appended to it (`Sent`); None (the default): nothing kept.
SENT: ContextVar[list[Sent] | None] = ContextVar("reme_es_sent", default=None)


class Guard(Protocol):
    """What a transport asks before each try and tells after it (`identity.ClusterIdentity`, the cluster check)."""

    async def before_try(self, connection_failed: bool) -> None:
        """Check before a try where due; raises to fail the try."""

    def seen(self) -> None:
        """A try was answered."""

    def doubt(self) -> None:
        """A try's connection failed."""


class _Connection:
    """The engine client of a transport and of its guarded views (`Transport.guarded`): made once, closed once."""

    client: Any = None


class Transport(ABC):
    """One engine client: created lazily, closed by `close`; `request` and `bulk` are all that callers use."""

    # The cluster check asked before every try: none on a dialect's own transport; a port sends through a guarded view
    # of it (`guarded`), so the transport itself is never changed.
    guard: Guard | None = None
    db_system = "opensearch"  # `db.system.name` of the engine-request spans (`reme_es.adapters.traced`)

    def __init__(self, settings: ClientSettings):
        self.settings = settings
        self._connection = _Connection()
        tries = None if settings.max_retries is None else settings.max_retries + 1
        self.policies = {
            REQUEST: RetryPolicy.shared(REQUEST, tries=tries, try_timeout=settings.timeout),
            BULK: RetryPolicy.shared(BULK, try_timeout=bulk_try_timeout(settings.timeout)),
        }
        self.clock = Clock()

    def guarded(self, guard: Guard) -> Transport:
        """A view of this transport with `guard` asked before every try: the same client, settings, policies and clock
        (shared, not copied), this transport unchanged (`IndexPort` sends through one, guarded by its cluster check)."""
        view = copy.copy(self)
        view.guard = guard
        return view

    @property
    def _client(self) -> Any:
        """The engine client if made (shared with the guarded views), else None."""
        return self._connection.client

    @_client.setter
    def _client(self, client: Any) -> None:
        self._connection.client = client

    @abstractmethod
    def _make_client(self) -> Any:
        """Create the engine's async client (lazily, on first use)."""

    @property
    def client(self) -> Any:
        """The engine client, created on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    async def close(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    @abstractmethod
    async def _perform(self, method: str, path: str, body: Any, params: dict | None, timeout: float) -> Any:
        """Send one request (one try, at most `timeout` seconds) and return the decoded body."""

    @abstractmethod
    def _bulk_helper(self, timeout: float) -> Any:
        """The client library's async_streaming_bulk bound to this client, each of its requests waiting at most
        `timeout` seconds: called as `helper(actions, **options)`."""

    @abstractmethod
    def error_info(self, exc: Exception) -> ErrorInfo | None:
        """What a client exception says, or None if it is not one of the client's."""

    async def request(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """Send one request, tried again on a retried status or a failed connection under the shared policy
        (`retry.Attempt`: tries, backoff, deadline); before each try the cluster check runs where it is due (see
        `guard`). Client exceptions are mapped to the ReMeESError tree. The loop is written here, not passed as a
        callback, so a request is two frames deep: this and the engine's `_perform`."""
        what, started = f"{method} {path}", time.perf_counter()
        attempt, connection_failed = Attempt(self.policies[REQUEST], self.clock), False
        while True:
            attempt.tries += 1
            timeout = attempt.timeout()
            traced = EngineRequest(self.db_system, method, path, server_of(tuple(self.settings.hosts)))
            try:
                await self._check(connection_failed)
                try:
                    answer = await self._perform(method, path, body, params, timeout)
                except ReMeESError:
                    raise
                except Exception as exc:
                    raise self.map_error(exc, what) from exc
            except ReMeESError as error:
                traced.end(error)
                connection_failed = self._failed(error)
                if await attempt.again(error, what):
                    traced.retried()
                    continue
                raise
            traced.end()
            self._answered()
            if (sent := SENT.get()) is not None:  # a caller asked to see its requests (`reme-es ui`'s search page)
                sent.append(Sent(method, path, body, answer, (time.perf_counter() - started) * 1000))
            return answer

    async def send_once(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """One try of a request, neither retried nor checked (the cluster check's own request)."""
        try:
            return await self._perform(method, path, body, params, self.policies[REQUEST].try_timeout)
        except Exception as exc:
            raise self.map_error(exc, f"{method} {path}") from exc

    async def _check(self, connection_failed: bool) -> None:
        if self.guard is not None:
            await self.guard.before_try(connection_failed)

    def _answered(self) -> None:
        if self.guard is not None:
            self.guard.seen()

    def _failed(self, error: ReMeESError) -> bool:
        """Note a failed try; whether its connection failed (the cluster check is then due, `guard`)."""
        failed = isinstance(error, ConnectionFailed) and not isinstance(error, ClusterChanged)
        if failed and self.guard is not None:
            self.guard.doubt()
        return failed

    def map_error(self, exc: Exception, what: str) -> ReMeESError:
        """Map a client exception to the ReMeESError tree (the only place this is done)."""
        info = self.error_info(exc) or ErrorInfo()
        return error_from_info(info, what, ", ".join(redact_host(h) for h in self.settings.hosts), exc)

    async def bulk(
        self,
        actions: list[dict],
        max_retries: int | None = None,
        chunk_bytes: int = BULK_REQUEST_BYTES,
        require_alias: bool = False,
    ) -> BulkOutcome:
        """Run bulk actions; items that fail with a retried status are sent again in rounds under the shared policy
        (`retry.bulk`; `max_retries` replaces its retries), every failure is reported. `require_alias`: every item's
        index must be an alias (a missing one fails the item; none is auto-created)."""
        policy = self.policies[BULK] if max_retries is None else self.policies[BULK].but(tries=max_retries + 1)

        async def round_(pending: list[dict], connection_failed: bool) -> tuple[list[tuple[bool, dict]], bool]:
            """One round's item results, after the cluster check where it is due. A check that could not tell, or
            a connection that failed (elasticsearch-py raises; opensearch-py reports it per item), leaves every item
            unanswered; another cluster answering raises ClusterChanged."""
            traced = EngineRequest(self.db_system, "POST", "/_bulk", server_of(tuple(self.settings.hosts)))
            try:
                await self._check(connection_failed)
                results = await self._stream(pending, chunk_bytes, require_alias, policy.try_timeout)
            except ReMeESError as exc:
                traced.end(exc)
                if not policy.retries(exc):
                    raise
                return [unanswered(a, exc) for a in pending], self._failed(exc)
            traced.end()
            self._answered()
            return results, False

        return await in_rounds(policy, self.clock, actions, round_, BulkOutcome())

    async def _stream(
        self, actions: list[dict], chunk_bytes: int, require_alias: bool, timeout: float
    ) -> list[tuple[bool, dict]]:
        """One round's item results; each bulk request of it (at most `chunk_bytes`, 2,000 actions) waits at most
        `timeout` seconds (the bulk try timeout: a round is not cut by the call's deadline)."""
        extra = {"require_alias": True} if require_alias else {}
        try:
            stream = self._bulk_helper(timeout)(
                actions,
                chunk_size=2000,
                max_chunk_bytes=chunk_bytes,
                raise_on_error=False,
                raise_on_exception=False,
                max_retries=0,
                yield_ok=True,
                **extra,
            )
            return [item async for item in stream]
        except Exception as exc:
            raise self.map_error(exc, "bulk") from exc
