"""Transport: one engine client behind `request` and `bulk`, with every client exception mapped in one place.

An engine module subclasses `Transport` and says how its client is made and called, and what a client
exception holds (`error_info`). Everything else is shared: the mapping to the `ReMeESError` tree by HTTP
status, error `type` and the exception's class (never by matching words in its text), and the retries: every
request and every bulk item under the shared policy (`engine_settings.json` `retry`, applied by `.retry`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..engine_settings import RETRYABLE_STATUS, SETTINGS  # noqa: F401  (RETRYABLE_STATUS: re-exported)
from ..errors import (
    AuthError,
    BulkError,
    BulkItemFailure,
    ConfigError,
    ConnectionFailed,
    IndexMissing,
    ReMeESError,
    RequestFailed,
)
from .retry import BULK, REQUEST, Attempt, Clock, RetryPolicy, out_of_time

log = logging.getLogger(__name__)

AWS_SERVICES = ("es", "aoss")
# One bulk request carries at most this many bytes (and 2,000 actions). The writer sends two streams at once, so one
# writer keeps at most ~8 MiB of bulk bodies on the node (10 MiB requests: ~20 MiB), well inside a 512 MiB heap's
# indexing-pressure limit (10% of the heap, shared by every writer). Not slower than 10 MiB (bench/settle.py).
BULK_REQUEST_BYTES = 4 << 20

# How a connection failed, from the exception objects the client raised (see `connection_kind`).
REFUSED, UNKNOWN_HOST, TLS, TIMEOUT, UNREACHABLE = "refused", "unknown host", "tls", "timeout", "unreachable"


def redact_host(url: str) -> str:
    """A host URL fit for messages and logs: a password written into it (`user:pw@host`) becomes `***`."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, hostport = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}" if ":" in userinfo else parts.netloc))


HOST_SCHEMES = ("http", "https")


def validate_hosts(hosts: Iterable[str] | str | None) -> list[str]:
    """Normalise a host list given as a list or a comma-separated string; only http:// and https:// URLs pass."""
    if hosts is None:
        return []
    items = hosts.split(",") if isinstance(hosts, str) else list(hosts)
    out = [h.strip().rstrip("/") for h in items if h and h.strip()]
    for h in out:
        scheme, sep, rest = h.partition("://")
        if not sep:
            raise ConfigError(f"host {redact_host(h)!r} needs a scheme, e.g. http://{redact_host(h)} or https://...")
        if scheme.lower() not in HOST_SCHEMES:
            raise ConfigError(
                f"host {redact_host(h)!r} has the unknown scheme {scheme!r}: use http:// or https:// "
                f"(the only schemes reme-es connects with), e.g. {redact_host('https://' + rest)}"
            )
        if not rest.split("/", 1)[0]:
            raise ConfigError(f"host {redact_host(h)!r} has no host name, e.g. http://127.0.0.1:9200")
    return out


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
    aws_service: str = "es"  # "es": Amazon OpenSearch Service, "aoss": OpenSearch Serverless

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


INDEX_NOT_FOUND = "index_not_found_exception"
# The status of a bulk item the answer does not cover (the request failed in transport): retried, reported with it.
UNANSWERED_ITEM_STATUS: int = SETTINGS["retry"]["bulk"]["unanswered_item_status"]


def index_missing(index: str, hosts: str, written: bool | None = None, reason: str | None = None) -> IndexMissing:
    """The error for an index or alias that does not exist (`written=False`: a write that was refused for it)."""
    refused = " Nothing was written in its place." if written is False else ""
    return IndexMissing(
        f"index {index or '(unnamed)'} does not exist on {hosts}: it was deleted (`reme-es drop`, another process's "
        f"drop()) or {hosts} now reaches another cluster.{refused} Run `reme-es sync` (or restart ReMe) to create "
        "the indices again, or point the hosts at the cluster that holds them.",
        index=index,
        reason=reason,
    )


@dataclass(frozen=True)
class ErrorInfo:
    """What a client exception says: HTTP status and error `type` of an answer, or how the connection failed."""

    status: int | None = None
    type: str = ""
    reason: str = ""
    index: str = ""  # the index an `index_not_found_exception` names
    connection: str | None = None  # one of REFUSED, UNKNOWN_HOST, TLS, TIMEOUT, UNREACHABLE


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps: `__cause__`/`__context__`, aiohttp's `os_error` and
    `certificate_error`, elastic-transport's `errors`, opensearch-py's `info` (bounded, no cycles)."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 32:
        e = todo.pop(0)
        if any(e is s for s in seen):
            continue
        seen.append(e)
        wrapped = [e.__cause__, e.__context__, getattr(e, "os_error", None), getattr(e, "certificate_error", None)]
        wrapped += list(getattr(e, "errors", None) or ()) if isinstance(getattr(e, "errors", None), tuple) else []
        wrapped.append(getattr(e, "info", None))
        todo += [w for w in wrapped if isinstance(w, BaseException)]
    return seen


def connection_kind(exc: BaseException) -> str:
    """Why a connection failed, from the classes of the exceptions involved: TLS, unknown host, refused, timeout."""
    causes = _causes(exc)
    names = {type(c).__name__ for c in causes}
    if any(isinstance(c, ssl.SSLError | ssl.CertificateError) for c in causes) or names & {
        "ClientConnectorCertificateError", "ClientConnectorSSLError", "ClientSSLError", "TlsError", "SSLError",
    }:
        return TLS
    if any(isinstance(c, socket.gaierror) for c in causes) or "ClientConnectorDNSError" in names:
        return UNKNOWN_HOST
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return REFUSED
    if any(isinstance(c, TimeoutError | asyncio.TimeoutError) for c in causes) or "ConnectionTimeout" in names:
        return TIMEOUT
    return UNREACHABLE


_ADVICE = {
    REFUSED: "the connection was refused: nothing listens on that host and port",
    UNKNOWN_HOST: "the host name does not resolve: check its spelling",
    TIMEOUT: "the server did not answer in time",
    UNREACHABLE: "",
}
TLS_HINT = (
    "the TLS handshake failed: set ca_certs to the CA file that signed the server certificate "
    "(verify_certs=False skips verification: tests only)"
)


def error_from_info(info: ErrorInfo, what: str, hosts: str, exc: BaseException) -> ReMeESError:
    """The ReMeESError for a classified client exception (status and connection kind decide; text is only shown)."""
    if info.connection is not None:
        advice = TLS_HINT if info.connection == TLS else _ADVICE[info.connection]
        return ConnectionFailed(
            f"could not reach {hosts} ({info.reason}); check that the server runs and the hosts/TLS settings "
            f"are right (start a local node with `reme-es server start`){'; ' + advice if advice else ''}",
            kind=info.connection,
        )
    if info.status in (401, 403):
        return AuthError(
            f"{what}: the server answered {info.status} ({info.reason}); check the username/password or API key, "
            "and that the role may use this index prefix"
        )
    if info.type == INDEX_NOT_FOUND:
        return index_missing(info.index, hosts, reason=info.reason)
    if info.status is None:
        return ReMeESError(f"{what} failed: {type(exc).__name__}: {exc}")
    return RequestFailed(
        f"{what} failed with {info.status}: {info.reason}", status=info.status, reason=info.reason, type=info.type
    )


def error_body_info(status: int | None, body: Any, fallback: Any) -> ErrorInfo:
    """ErrorInfo of an error answer's body (`{"error": {"type", "reason", "caused_by"}}`), the same on both engines."""
    err = body.get("error", fallback) if isinstance(body, dict) else fallback
    if isinstance(err, dict):
        kind = str(err.get("type") or "")
        reason = err.get("reason") or kind
        caused = (err.get("caused_by") or {}).get("reason")
        if caused and caused not in (reason or ""):
            reason = f"{reason}: {caused}"
    else:
        kind, reason = "", str(err)
    index = str(err.get("index") or "") if isinstance(err, dict) else ""
    return ErrorInfo(status=status if isinstance(status, int) else None, type=kind, reason=str(reason), index=index)


class Transport(ABC):
    """One engine client: created lazily, closed by `close`; `request` and `bulk` are all that callers use."""

    def __init__(self, settings: ClientSettings):
        self.settings = settings
        self._client: Any = None
        tries = None if settings.max_retries is None else settings.max_retries + 1
        self.policies = {
            REQUEST: RetryPolicy.shared(REQUEST, tries=tries, try_timeout=settings.timeout),
            BULK: RetryPolicy.shared(BULK, try_timeout=settings.timeout),
        }
        self.clock = Clock()

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
    def _bulk_helper(self) -> Any:
        """The client library's async_streaming_bulk."""

    @abstractmethod
    def error_info(self, exc: Exception) -> ErrorInfo | None:
        """What a client exception says, or None if it is not one of the client's."""

    async def request(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """Send one request, tried again on a retried status or a failed connection under the shared policy
        (`retry.request`: tries, backoff, deadline); client exceptions are mapped to the ReMeESError tree."""
        attempt, what = Attempt(self.policies[REQUEST], self.clock), f"{method} {path}"
        while True:
            attempt.tries += 1
            try:
                return await self._perform(method, path, body, params, attempt.timeout())
            except ReMeESError:
                raise
            except Exception as exc:
                error = self.map_error(exc, what)
                if not (attempt.policy.retries(error) and attempt.may_retry()):
                    raise error from exc
                delay = await attempt.backoff()
                if delay is None:
                    raise out_of_time(error, what, attempt) from exc
                log.info("%s: %s; try %d in %.1fs", what, error, attempt.tries + 1, delay)

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
        attempt, outcome, pending = Attempt(policy, self.clock), BulkOutcome(), actions
        while pending:
            attempt.tries += 1
            results = await self._round(pending, chunk_bytes, require_alias)
            failed = self._bulk_round(outcome, pending, results, policy.statuses)
            delay = await attempt.backoff() if failed and attempt.may_retry() else None
            if delay is None:
                late = f" (retries stopped at the {policy.deadline:g} s deadline)" if attempt.may_retry() else ""
                outcome.failures += [replace(f, reason=f.reason + late) for _, f in failed]
                break
            log.warning("bulk: %d item(s) rejected with 429/5xx, retry %d in %.1fs", len(failed), attempt.tries, delay)
            pending = [action for action, _ in failed]
        return outcome

    async def _round(self, pending: list[dict], chunk_bytes: int, require_alias: bool) -> list[tuple[bool, dict]]:
        """One round's item results; a connection that failed (elasticsearch-py raises; opensearch-py reports it per
        item) leaves every item unanswered."""
        try:
            return await self._stream(pending, chunk_bytes, require_alias)
        except ConnectionFailed as exc:
            return [(False, {a.get("_op_type", "index"): {"status": None, "error": str(exc)}}) for a in pending]

    async def _stream(self, actions: list[dict], chunk_bytes: int, require_alias: bool) -> list[tuple[bool, dict]]:
        extra = {"require_alias": True} if require_alias else {}
        try:
            stream = self._bulk_helper()(
                self.client,
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

    @staticmethod
    def _bulk_round(
        outcome: BulkOutcome, pending: list[dict], results: list, statuses: frozenset[int]
    ) -> list[tuple[dict, BulkItemFailure]]:
        """Book one round's items into `outcome`; return the items that failed with one of `statuses` (an item
        without an answer counts as `unanswered_item_status`), with their failure, not booked."""
        failed: list[tuple[dict, BulkItemFailure]] = []
        for action, (ok, item) in zip(pending, results, strict=True):
            op, info = next(iter(item.items()))
            raw_status = info.get("status")
            status = raw_status if isinstance(raw_status, int) else UNANSWERED_ITEM_STATUS
            error = info.get("error")
            if ok or (op == "delete" and status == 404 and not error):  # a 404 with an error: the index is missing
                outcome.succeeded += 1
                if "_seq_no" in info and op != "delete":
                    key = (action["_index"], str(action.get("_id")))
                    outcome.versions[key] = (info["_seq_no"], info["_primary_term"])
                continue
            reason = error.get("reason", str(error)) if isinstance(error, dict) else str(error or info)
            kind = str(error.get("type") or "") if isinstance(error, dict) else ""
            index = str(info.get("_index") or action.get("_index") or "")
            failure = BulkItemFailure(index, str(info.get("_id", action.get("_id"))), status, reason, kind)
            if status in statuses:
                failed.append((action, failure))
            else:
                outcome.failures.append(failure)
        return failed
