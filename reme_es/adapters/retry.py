"""The retry policy both languages share (`engine_settings.json`, section `retry`), as the Python transport applies it.

A call is tried up to `tries` times while its deadline lasts; a retried status (429, 5xx as the file lists them) or a
failed connection is tried again after an exponential, jittered backoff. The engine clients' own retries are off, so
this is the only retry layer. `Clock` is the time and randomness the loops see; the golden behaviour cases
(`tests/golden/behaviour_cases.json`) replace it to replay scripted servers without waiting.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypedDict, TypeVar, Unpack

from ..core.engine_settings import SETTINGS
from ..core.errors import BulkItemFailure, ClusterChanged, ConnectionFailed, ReMeESError, RequestFailed

log = logging.getLogger(__name__)
T = TypeVar("T")

REQUEST, BULK = "request", "bulk"
# Error types no retry mends, whatever their status (the shared `retry.not_retried_types`): the security plugin's
# refusals (OpenSearch answers an update under document-level security with a 500 `security_exception`).
PERMANENT_TYPES: frozenset[str] = frozenset(SETTINGS["retry"]["not_retried_types"])
# The status of a bulk item the answer does not cover (the request failed in transport): retried, reported with it.
UNANSWERED_ITEM_STATUS: int = SETTINGS["retry"]["bulk"]["unanswered_item_status"]


def bulk_try_timeout(request_try_timeout: float) -> float:
    """The timeout of one bulk request (`retry.bulk.try_timeout_rule`): the shared bulk try timeout, or the request
    try timeout in force when that is longer."""
    return max(float(SETTINGS["retry"]["bulk"]["try_timeout_s"]), request_try_timeout)


class _PolicyChanges(TypedDict, total=False):
    """The values `RetryPolicy.but` may replace, with their types."""

    tries: int
    base: float
    cap: float
    deadline: float
    try_timeout: float
    statuses: frozenset[int]
    jitter: tuple[float, float]


@dataclass(frozen=True)
class RetryPolicy:
    """How one kind of call (`request` or `bulk`) is retried: tries, backoff base and cap, deadline, try timeout."""

    tries: int
    base: float
    cap: float
    deadline: float
    try_timeout: float
    statuses: frozenset[int]
    jitter: tuple[float, float]

    @classmethod
    def shared(cls, kind: str, tries: int | None = None, try_timeout: float | None = None) -> RetryPolicy:
        """The policy of `kind` from the shared settings; `tries` and `try_timeout` replace the file's when given."""
        rule, kinds = SETTINGS["retry"], SETTINGS["retry"][kind]
        low, high = rule["backoff"]["jitter"]
        return cls(
            tries=kinds["tries"] if tries is None else tries,
            base=float(kinds["base_s"]),
            cap=float(kinds["max_s"]),
            deadline=float(kinds["deadline_s"]),
            try_timeout=float(kinds["try_timeout_s"] if try_timeout is None else try_timeout),
            statuses=frozenset(rule["statuses"]),
            jitter=(float(low), float(high)),
        )

    def but(self, **changes: Unpack[_PolicyChanges]) -> RetryPolicy:
        """This policy with some values replaced (the golden cases' overrides)."""
        return replace(self, **changes)

    def delay(self, retry: int, rand: float) -> float:
        """The backoff before retry number `retry` (0-based), for a `rand` drawn uniformly from [0, 1)."""
        low, high = self.jitter
        return min(self.cap, self.base * 2**retry) * (low + rand * (high - low))

    def retries(self, error: ReMeESError) -> bool:
        """Whether a failed try is worth another: a retried status, or a connection that failed (not another
        cluster answering: that is no failure a retry mends)."""
        if isinstance(error, ClusterChanged):
            return False
        if isinstance(error, ConnectionFailed):
            return True
        return isinstance(error, RequestFailed) and error.status in self.statuses and error.type not in PERMANENT_TYPES


class Clock:
    """Time and randomness as the retry loops see them: monotonic seconds, asyncio's sleep, `random.random`."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def random(self) -> float:
        return random.random()


class Attempt:
    """One call's tries under a policy: the deadline counted from its start, and the backoff between tries."""

    def __init__(self, policy: RetryPolicy, clock: Clock):
        self.policy, self.clock = policy, clock
        self.until = clock.now() + policy.deadline
        self.tries = 0

    def timeout(self) -> float:
        """The timeout of the next try: the try timeout, cut to the time left before the deadline."""
        return max(0.001, min(self.policy.try_timeout, self.until - self.clock.now()))

    def may_retry(self) -> bool:
        """Whether tries are left after the one just made."""
        return self.tries < self.policy.tries

    async def backoff(self) -> float | None:
        """Sleep before the next try and return the delay; None (no sleep) when it would reach the deadline."""
        delay = self.policy.delay(self.tries - 1, self.clock.random())
        if self.clock.now() + delay >= self.until:
            return None
        await self.clock.sleep(delay)
        return delay

    async def again(self, error: ReMeESError, what: str) -> bool:
        """After the failed try `error`: False when no other try is due (not a retried failure, or no tries left);
        else sleep the backoff and True. The deadline's error (`out_of_time`) is raised when the backoff would reach
        it. A request's loop (`Transport.request`) is written around this, one frame deep."""
        if not (self.policy.retries(error) and self.may_retry()):
            return False
        delay = await self.backoff()
        if delay is None:
            raise out_of_time(error, what, self) from error
        log.info("%s: %s; try %d in %.1fs", what, error, self.tries + 1, delay)
        return True


def out_of_time(error: ReMeESError, what: str, attempt: Attempt) -> ReMeESError:
    """The error of a call whose deadline passed: the last failure's class and status, saying so and what to do."""
    message = (
        f"{what} failed: no success within {attempt.policy.deadline:g} s (the call deadline) after {attempt.tries} "
        f"tries; last: {error}. Is the node overloaded or restarting? Try again later"
    )
    if isinstance(error, ConnectionFailed):
        return ConnectionFailed(message, kind=error.kind)
    if isinstance(error, RequestFailed):
        return RequestFailed(message, status=error.status, reason=error.reason, type=error.type)
    return ReMeESError(message)


async def in_rounds(
    policy: RetryPolicy,
    clock: Clock,
    actions: list[dict],
    send_round: Callable[[list[dict], bool], Awaitable[tuple[list[tuple[bool, dict]], bool]]],
    outcome: Any,
) -> Any:
    """Bulk `actions` in rounds: `send_round(pending, connection_failed)` answers each item; the items that failed
    with a retried status go again after the backoff while tries and the deadline last. Every item's result is
    booked into `outcome` (a BulkOutcome): the ones that still fail with their last status."""
    attempt, pending, connection_failed = Attempt(policy, clock), actions, False
    while pending:
        attempt.tries += 1
        results, connection_failed = await send_round(pending, connection_failed)
        failed = book_round(outcome, pending, results, policy.statuses)
        delay = await attempt.backoff() if failed and attempt.may_retry() else None
        if delay is None:
            late = f" (retries stopped at the {policy.deadline:g} s deadline)" if failed and attempt.may_retry() else ""
            outcome.failures += [replace(f, reason=f.reason + late) for _, f in failed]
            break
        log.warning("bulk: %d item(s) rejected with 429/5xx, retry %d in %.1fs", len(failed), attempt.tries, delay)
        pending = [action for action, _ in failed]
    return outcome


def unanswered(action: dict, error: ReMeESError) -> tuple[bool, dict]:
    """The result of a bulk item whose request got no answer (no status: counted as UNANSWERED_ITEM_STATUS)."""
    return False, {action.get("_op_type", "index"): {"status": None, "error": str(error)}}


def _exception_type(exc: object) -> str:
    """The error type of a whole bulk request's failure that the client reported per item (opensearch-py's helper
    puts the exception beside the item: its `error` is the answer's type, e.g. `security_exception`)."""
    kind = getattr(exc, "error", "") if isinstance(exc, Exception) else ""
    return kind if isinstance(kind, str) else ""


def book_round(
    outcome: Any, pending: list[dict], results: list, statuses: frozenset[int]
) -> list[tuple[dict, BulkItemFailure]]:
    """Book one round's item results into `outcome` (a BulkOutcome); return the items that failed with one of
    `statuses` (an item without an answer counts as UNANSWERED_ITEM_STATUS), with their failure, not booked."""
    failed: list[tuple[dict, BulkItemFailure]] = []
    for action, (ok, item) in zip(pending, results, strict=True):
        op, info = next(iter(item.items()))
        raw_status = info.get("status")
        status = raw_status if isinstance(raw_status, int) else UNANSWERED_ITEM_STATUS
        error = info.get("error")
        if ok or (op == "delete" and status == 404 and not error):  # a 404 with an error: the index is missing
            outcome.succeeded += 1
            if "_seq_no" in info and op != "delete":
                outcome.versions[(action["_index"], str(action.get("_id")))] = (info["_seq_no"], info["_primary_term"])
            continue
        reason = error.get("reason", str(error)) if isinstance(error, dict) else str(error or info)
        kind = str(error.get("type") or "") if isinstance(error, dict) else _exception_type(info.get("exception"))
        index = str(info.get("_index") or action.get("_index") or "")
        failure = BulkItemFailure(index, str(info.get("_id", action.get("_id"))), status, reason, kind)
        if status in statuses and kind not in PERMANENT_TYPES:
            failed.append((action, failure))
        else:
            outcome.failures.append(failure)
    return failed
