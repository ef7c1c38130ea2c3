"""Connection failures are classified by the exceptions' classes, not their words: a refused port, an unknown host
and a failed TLS handshake each get their own advice, and only the TLS failure tells to set ca_certs.

aiohttp's text for every connection error names `ssl:default` (`Cannot connect to host h:p ssl:default [...]`),
so matching "ssl" in it gave the TLS hint for a refused plain-http port too.
"""

from __future__ import annotations

import asyncio
import socket
import ssl

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey
from elastic_transport import ConnectionError as ESConnectionError
from elastic_transport import TlsError
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.error_map import REFUSED, TLS, UNKNOWN_HOST, connection_kind
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.core.errors import ConnectionFailed

TLS_HINT = "set ca_certs"
_KEY = ConnectionKey("127.0.0.1", 9, False, True, None, None, None, None)  # what aiohttp's connector builds


def _aiohttp_errors() -> dict[str, Exception]:
    refused = aiohttp.ClientConnectorError(_KEY, ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"))
    dns = aiohttp.ClientConnectorDNSError(_KEY, socket.gaierror(-2, "Name or service not known"))
    cert = aiohttp.ClientConnectorCertificateError(
        _KEY, ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    )
    return {REFUSED: refused, UNKNOWN_HOST: dns, TLS: cert}


@pytest.mark.parametrize("kind", [REFUSED, UNKNOWN_HOST, TLS])
def test_classifier_reads_the_wrapped_exception_classes_of_both_clients(kind):
    cause = _aiohttp_errors()[kind]
    os_error = OSConnectionError("N/A", str(cause), cause)  # what opensearch-py raises
    es_error = ESConnectionError(str(cause), errors=(cause,))  # what elastic-transport raises
    assert connection_kind(os_error) == connection_kind(es_error) == kind


def test_elasticsearch_tls_error_is_tls():
    assert connection_kind(TlsError("TLS error", errors=(ssl.SSLError(1, "wrong version number"),))) == TLS


@pytest.mark.parametrize("dialect_class", [OpenSearchDialect, ElasticsearchDialect])
@pytest.mark.parametrize("kind", [REFUSED, UNKNOWN_HOST, TLS])
def test_three_causes_give_three_messages_and_only_tls_mentions_ca_certs(dialect_class, kind):
    cause = _aiohttp_errors()[kind]
    dialect = dialect_class(ClientSettings(hosts=["http://127.0.0.1:9"]))
    if dialect_class is OpenSearchDialect:
        exc = OSConnectionError("N/A", str(cause), cause)
    else:
        exc = (TlsError if kind == TLS else ESConnectionError)(str(cause), errors=(cause,))
    err = dialect.transport.map_error(exc, "GET /")
    assert isinstance(err, ConnectionFailed) and err.kind == kind
    message = str(err)
    assert message.startswith("could not reach http://127.0.0.1:9 (")
    assert (TLS_HINT in message) == (kind == TLS)
    assert ("connection was refused" in message) == (kind == REFUSED)
    assert ("does not resolve" in message) == (kind == UNKNOWN_HOST)


def _connection_failure(dialect) -> ConnectionFailed:
    """The ConnectionFailed of one `GET /` through a real client (closed afterwards)."""

    async def call() -> None:
        try:
            await dialect.transport.request("GET", "/")
        finally:
            await dialect.transport.close()

    with pytest.raises(ConnectionFailed) as err:
        asyncio.run(call())
    return err.value


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


@pytest.mark.parametrize("dialect_class", [OpenSearchDialect, ElasticsearchDialect])
def test_a_real_closed_port_is_reported_as_refused_without_a_tls_hint(dialect_class):
    url = f"http://127.0.0.1:{_closed_port()}"
    err = _connection_failure(dialect_class(ClientSettings(hosts=[url], timeout=2.0, max_retries=0)))
    message = str(err)
    assert err.kind == REFUSED
    assert "connection was refused: nothing listens on that host and port" in message
    assert TLS_HINT not in message and "handshake" not in message


def test_a_real_unknown_host_is_reported_as_such_without_a_tls_hint():
    settings = ClientSettings(hosts=["http://no-such-host.invalid:9200"], timeout=3.0, max_retries=0)
    err = _connection_failure(OpenSearchDialect(settings))
    assert err.kind == UNKNOWN_HOST
    assert "the host name does not resolve" in str(err) and TLS_HINT not in str(err)
