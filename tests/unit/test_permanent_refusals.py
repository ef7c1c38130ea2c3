"""Refusals no retry mends are not retried (issue 47): a `security_exception` of any status, for a single request
and for a bulk item, also when the client reports a whole bulk request's failure per item (opensearch-py)."""

from __future__ import annotations

from reme_es.adapters.retry import RetryPolicy, book_round
from reme_es.adapters.transport import BulkOutcome
from reme_es.core.errors import RequestFailed


class _TransportError(Exception):
    """opensearch-py's TransportError as far as the retry reads it: the answer's error type in `error`."""

    error = "security_exception"


def test_a_security_exception_request_is_not_retried_a_plain_500_is():
    policy = RetryPolicy.shared("request")
    assert not policy.retries(RequestFailed("x", status=500, type="security_exception"))
    assert policy.retries(RequestFailed("x", status=500, type="exception"))


def test_a_refused_bulk_item_is_booked_once_not_sent_again():
    actions = [{"_op_type": "update", "_index": "s-chunks", "_id": str(i)} for i in range(3)]
    refused = {"update": {"status": 500, "error": "TransportError(500, ...)", "exception": _TransportError()}}
    typed = {"update": {"status": 500, "error": {"type": "security_exception", "reason": "no"}}}
    busy = {"update": {"status": 503, "error": {"type": "unavailable", "reason": "later"}}}
    outcome = BulkOutcome()
    again = book_round(outcome, actions, [(False, refused), (False, typed), (False, busy)], frozenset({500, 503}))
    assert [a["_id"] for a, _ in again] == ["2"]
    assert [(f.id, f.status, f.type) for f in outcome.failures] == [
        ("0", 500, "security_exception"),
        ("1", 500, "security_exception"),
    ]
