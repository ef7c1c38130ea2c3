"""Client exceptions read and mapped to the `ReMeESError` tree in one place: what an exception says (`ErrorInfo`: an
answer's status and error `type`, or how its connection failed, from the exception classes, never from words in its
text) and the error raised for it (`error_from_info`). Engine modules describe their exceptions with these; the
transport maps every failure through them."""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass
from typing import Any

from ..core.errors import AuthError, ConnectionFailed, IndexMissing, ReMeESError, RequestFailed

# How a connection failed, from the exception objects the client raised (see `connection_kind`).
REFUSED, UNKNOWN_HOST, TLS, TIMEOUT, UNREACHABLE = "refused", "unknown host", "tls", "timeout", "unreachable"

INDEX_NOT_FOUND = "index_not_found_exception"


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
        "ClientConnectorCertificateError",
        "ClientConnectorSSLError",
        "ClientSSLError",
        "TlsError",
        "SSLError",
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
            "and that the role may use this index prefix",
            status=info.status,
        )
    if info.type == INDEX_NOT_FOUND:
        return index_missing(info.index, hosts, reason=info.reason)
    if info.status is None:
        return ReMeESError(f"{what} failed: {type(exc).__name__}: {exc}")
    return RequestFailed(
        f"{what} failed with {info.status}: {info.reason}", status=info.status, reason=info.reason, type=info.type
    )


def error_body_info(status: int | str | None, body: Any, fallback: Any) -> ErrorInfo:
    """ErrorInfo of an error answer's body (`{"error": {"type", "reason", "caused_by"}}`), the same on both engines.
    A status that is not a number (opensearch-py's 'N/A' for a failure before any answer) is kept as None."""
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
