"""One exception family for reme-es.

    ReMeESError
    ├── ConfigError            bad configuration or arguments (index prefix, hosts, flags)
    │   └── WorkspaceConflict  another folder writes this workspace of the index set
    ├── ServerError            the managed local node: Java, download, port, start-up, health
    ├── ConnectionFailed       the cluster cannot be reached (all hosts down, TLS, timeout)
    │   └── ClusterChanged     the hosts now reach another cluster than the one the store opened
    ├── AuthError              401 / 403 from the cluster
    ├── CapabilityError        the server lacks a feature the call needs (k-NN, hybrid, pipeline)
    ├── MappingError           an existing index has a mapping reme-es cannot use
    │   ├── DimensionMismatch  a vector's length differs from the index's dimension
    │   └── IndexMissing       an index or alias the call needs does not exist (also a RequestFailed, 404)
    ├── InvalidFilter          a search filter that cannot be translated
    ├── InvalidInput           text, metadata or ids that cannot be stored as given
    ├── RequestFailed          the server rejected a request (status and reason kept)
    │   └── IndexUnavailable   an index has shards no node holds (a lost node): named, with what to do
    └── BulkError              some bulk items failed; every failed item is listed

Client exceptions are mapped to this tree in one place (`reme_es.adapters.transport.Transport.map_error`), by
HTTP status, the error's `type` and the exception's class, never by the words of a message.
Messages say what to do next and never contain credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ReMeESError(Exception):
    """Base class of every error reme-es raises on purpose."""


class ConfigError(ReMeESError):
    """A configuration value or argument is invalid."""


class WorkspaceConflict(ConfigError):
    """Another folder (or host) writes this workspace of the index set: a sync from here would delete its files."""


class ServerError(ReMeESError):
    """The managed local node could not be fetched, configured, started or stopped."""


class ConnectionFailed(ReMeESError):
    """No configured host answered; `kind` says why when known (refused, unknown host, tls, timeout)."""

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.kind = kind


class ClusterChanged(ConnectionFailed):
    """The hosts answer, but as another cluster (its UUID differs from the one recorded when the store opened)."""

    def __init__(self, message: str):
        super().__init__(message, kind="another cluster")


class AuthError(ReMeESError):
    """The cluster refused the credentials or the role lacks a privilege (`status`: 401 or 403, when known)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class CapabilityError(ReMeESError):
    """The server lacks a feature this call needs."""


class MappingError(ReMeESError):
    """An index exists with a mapping reme-es cannot use."""


class DimensionMismatch(MappingError):
    """A vector's dimension differs from the one the index was created with."""


class InvalidFilter(ReMeESError):
    """A search filter key or value cannot be translated."""


class InvalidInput(ReMeESError):
    """A document, text or id cannot be stored as given."""


class RequestFailed(ReMeESError):
    """The server rejected a request: its HTTP `status`, the error `type` (e.g. `resource_already_exists_exception`)
    and `reason`, as far as the answer carried them."""

    def __init__(self, message: str, status: int | None = None, reason: str | None = None, type: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.type = type


class IndexMissing(RequestFailed, MappingError):
    """An index or alias a call needs does not exist (404 `index_not_found_exception`); `index` names it. Writes
    require the alias, so nothing was written to a dynamically created index in its place."""

    def __init__(self, message: str, index: str = "", reason: str | None = None):
        super().__init__(message, status=404, reason=reason, type="index_not_found_exception")
        self.index = index


class IndexUnavailable(RequestFailed):
    """Indices the call needs have primary shards that no node holds (red: a lost node without a replica of them);
    `indices` maps each to its unassigned shard count."""

    def __init__(self, message: str, indices: dict[str, int] | None = None):
        super().__init__(message, status=503, type="index_unavailable")
        self.indices = indices or {}


@dataclass(frozen=True)
class BulkItemFailure:
    """One failed bulk item: its id, HTTP status, the server's reason and error type."""

    index: str
    id: str
    status: int
    reason: str
    type: str = field(default="", compare=False)  # the server's error type, where it gave one


class BulkError(ReMeESError):
    """Some items of a bulk request failed after retries; `failures` lists each of them."""

    def __init__(self, failures: list[BulkItemFailure], succeeded: int = 0):
        self.failures = failures
        self.succeeded = succeeded
        shown = "; ".join(f"{f.id}: {f.status} {f.reason}" for f in failures[:5])
        more = f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(
            f"{len(failures)} bulk item(s) failed, {succeeded} succeeded: {shown}{more}. "
            "Fix the listed documents and write them again; the others are stored."
        )
