"""The engine settings Python shares with TypeScript, checked against the golden file memorie's unit tests read too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings, knn_candidates
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.identity import IDLE_RECHECK_SECONDS, check_answer, compare_uuid
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.retry import RetryPolicy
from reme_es.adapters.transport import RETRYABLE_STATUS
from reme_es.core import engine_settings
from reme_es.core.checks import validate_prefix
from reme_es.core.errors import ConfigError
from reme_es.core.options import IndexOptions

GOLDEN = json.loads((Path(__file__).parent / "golden" / "engine_settings.json").read_text())
SETTINGS = ClientSettings(hosts=["http://127.0.0.1:9200"])


def test_hnsw_defaults_are_the_index_options_defaults():
    options = IndexOptions()
    assert {"m": options.hnsw_m, "ef_construction": options.hnsw_ef_construction} == GOLDEN["hnsw"]


@pytest.mark.parametrize("dialect", [OpenSearchDialect, ElasticsearchDialect], ids=["opensearch", "elasticsearch"])
def test_each_dialect_maps_vectors_as_the_shared_settings_say(dialect):
    options = IndexOptions(dims=3)
    mapping = dialect(SETTINGS).vector_mapping(3, options.hnsw_m, options.hnsw_ef_construction)
    assert mapping == GOLDEN["vector_mapping_dims_3"][dialect.engine]


@pytest.mark.parametrize("k,expected", GOLDEN["knn_candidates"])
def test_knn_candidates(k, expected):
    assert knn_candidates(k) == expected


@pytest.mark.parametrize("status,retried", GOLDEN["retryable_statuses"])
def test_retried_statuses(status, retried):
    assert (status in RETRYABLE_STATUS) is retried


@pytest.mark.parametrize("kind", ["request", "bulk"])
def test_retry_policies_of_the_transport(kind):
    policy = OpenSearchDialect(SETTINGS).transport.policies[kind]
    expected = GOLDEN["retry_policies"][kind]
    got = {
        "tries": policy.tries,
        "base_s": policy.base,
        "max_s": policy.cap,
        "deadline_s": policy.deadline,
        "try_timeout_s": policy.try_timeout,
    }
    assert got == expected


@pytest.mark.parametrize("kind,retry,rand,delay", GOLDEN["backoff_delays"])
def test_backoff_delays(kind, retry, rand, delay):
    assert RetryPolicy.shared(kind).delay(retry, rand) == pytest.approx(delay)


def test_cluster_check_idle_time():
    assert IDLE_RECHECK_SECONDS == GOLDEN["cluster_check_idle_s"]


@pytest.mark.parametrize("status,meaning", GOLDEN["cluster_check_answers"])
def test_cluster_check_answers(status, meaning):
    assert check_answer(status) == meaning


@pytest.mark.parametrize("recorded,answered,verdict", GOLDEN["cluster_check_uuids"])
def test_cluster_check_uuids(recorded, answered, verdict):
    assert compare_uuid(recorded, answered) == verdict


@pytest.mark.parametrize("dialect", [OpenSearchDialect, ElasticsearchDialect], ids=["opensearch", "elasticsearch"])
@pytest.mark.parametrize("request_timeout,bulk_timeout", GOLDEN["bulk_try_timeouts"])
def test_bulk_try_timeout(dialect, request_timeout, bulk_timeout):
    transport = dialect(ClientSettings(hosts=SETTINGS.hosts, timeout=request_timeout)).transport
    assert (transport.policies["request"].try_timeout, transport.policies["bulk"].try_timeout) == (
        request_timeout,
        bulk_timeout,
    )


@pytest.mark.parametrize("node,engine", GOLDEN["engine_detection"])
def test_engine_detection(node, engine):
    assert engine_settings.detected_engine(node) == engine
    assert [d.detects(node) for d in (OpenSearchDialect, ElasticsearchDialect)] == [
        engine == "opensearch",
        engine == "elasticsearch",
    ]


PREFIXES = GOLDEN["index_prefixes"] + [["p" * n, ok] for n, ok in GOLDEN["index_prefix_lengths"]]


@pytest.mark.parametrize("prefix,valid", PREFIXES)
def test_index_prefix_rule(prefix, valid):
    assert engine_settings.valid_prefix(prefix) is valid
    if valid:
        assert validate_prefix(prefix) == prefix
    else:
        with pytest.raises(ConfigError, match="is not allowed: use 1-200 characters"):
            validate_prefix(prefix)
