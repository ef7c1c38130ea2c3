"""AWS SigV4 for Amazon OpenSearch, without AWS: requests are captured where aiohttp would send them.

Each signed request is verified by recomputing its signature here from the SigV4 specification, so the
`Authorization` header is checked to be a valid signature of the very bytes and headers that go out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import sys
import traceback
import urllib.parse
from dataclasses import dataclass, fields

import pytest

pytest.importorskip("botocore", reason="botocore is not installed: pip install 'reme-es[aws]'")

from click.testing import CliRunner
from opensearchpy import AsyncHttpConnection

from reme_es.adapters.aoss import ServerlessDialect
from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.cli import main
from reme_es.core.errors import ConfigError
from reme_es.core.options import load_options
from reme_es.store import connect
from reme_es.store.indices import IndexSet

ACCESS_KEY = "AKIAREMEESTEST000001"
SECRET_KEY = "reme-es/Secret+Key/0001"
TOKEN = "reme-es-Session-Token-0001"
SECRETS = (SECRET_KEY, TOKEN)
HOST = "https://search-notes-abc123.eu-west-1.es.amazonaws.com"
REGION = "eu-west-1"


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """botocore sees no credentials at all: no AWS_* variables, no ~/.aws files, no instance metadata."""
    import os

    for name in list(os.environ):
        if name.startswith(("AWS_", "REME_ES_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def fake_aws(no_aws, monkeypatch):
    """Fixed temporary credentials in the environment, where botocore's default chain finds them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)


@dataclass
class Sent:
    method: str
    url: str
    body: bytes
    headers: dict[str, str]


class _ReplyHeaders(dict):
    def getall(self, name, default=()):
        return default


class _Reply:
    status = 200
    headers = _ReplyHeaders({"content-type": "application/json"})

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def text(self):
        return '{"acknowledged": true}'


class _Session:
    """Stands in for aiohttp.ClientSession: records what would go on the wire and answers 200."""

    def __init__(self, sent: list[Sent]):
        self.sent = sent

    def request(self, method, url, data=None, headers=None, **kwargs):
        body = data.encode() if isinstance(data, str) else (data or b"")
        self.sent.append(Sent(method, str(url), body, dict(headers or {})))
        return _Reply()

    async def close(self):
        pass


@pytest.fixture
def wire(monkeypatch) -> list[Sent]:
    """Requests the SigV4 connection class sends; any other connection class would try the network."""
    sent: list[Sent] = []

    async def create_session(self):
        import asyncio

        self.loop = asyncio.get_running_loop()
        self.session = _Session(sent)

    monkeypatch.setattr(AsyncHttpConnection, "_create_aiohttp_session", create_session)
    return sent


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify_sigv4(sent: Sent, secret_key: str, region: str, service: str) -> None:
    """Recompute the request's SigV4 signature (AWS General Reference, Signature Version 4) and compare."""
    algorithm, rest = sent.headers["Authorization"].split(" ", 1)
    assert algorithm == "AWS4-HMAC-SHA256"
    parts = dict(item.strip().split("=", 1) for item in rest.split(","))
    signed_names = parts["SignedHeaders"].split(";")
    amz_date = sent.headers["X-Amz-Date"]
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    assert parts["Credential"] == f"{ACCESS_KEY}/{scope}"

    url = urllib.parse.urlsplit(sent.url)
    lower = {k.lower(): v for k, v in sent.headers.items()}
    lower.setdefault("host", url.hostname if url.port in (None, 443) else f"{url.hostname}:{url.port}")
    query = sorted(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    canonical = "\n".join(
        [
            sent.method,
            urllib.parse.quote(url.path or "/", safe="/~"),
            "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}" for k, v in query),
            "".join(f"{name}:{' '.join(lower[name].split())}\n" for name in signed_names),
            parts["SignedHeaders"],
            hashlib.sha256(sent.body).hexdigest(),
        ]
    )
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(f"AWS4{secret_key}".encode(), amz_date[:8])
    for step in (region, service, "aws4_request"):
        key = _hmac(key, step)
    assert parts["Signature"] == hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def _sigv4(service: str = "es", **kw) -> ClientSettings:
    return ClientSettings(hosts=[HOST], aws_region=REGION, aws_service=service, max_retries=0, **kw)


# ----------------------------------------------------------------------------------------- signing


@pytest.mark.parametrize("service", ["es", "aoss"])
async def test_opensearch_client_signs_each_request_with_the_default_chain_credentials(fake_aws, wire, service):
    dialect = OpenSearchDialect(_sigv4(service))
    try:
        query = {"query": {"match": {"text": "a"}}}
        answer = await dialect.transport.request("POST", "/notes/_search", query, {"size": 3})
        await dialect.transport.request("POST", "/notes/_search", {"query": {"match": {"text": "b"}}}, {"size": 3})
    finally:
        await dialect.transport.close()

    assert answer == {"acknowledged": True}
    assert [(s.method, s.url) for s in wire] == [("POST", f"{HOST}/notes/_search?size=3")] * 2
    first, second = wire
    assert first.body == b'{"query":{"match":{"text":"a"}}}'
    amz_date = first.headers["X-Amz-Date"]
    today = dt.datetime.now(dt.UTC).date()
    assert dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").date() in (today, today - dt.timedelta(days=1))
    assert first.headers["Authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{amz_date[:8]}/{REGION}/{service}/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="
    )
    assert first.headers["X-Amz-Content-SHA256"] == hashlib.sha256(first.body).hexdigest()
    assert first.headers["X-Amz-Security-Token"] == TOKEN
    verify_sigv4(first, SECRET_KEY, REGION, service)
    verify_sigv4(second, SECRET_KEY, REGION, service)
    signature = first.headers["Authorization"].rsplit("Signature=", 1)[1]
    assert signature != second.headers["Authorization"].rsplit("Signature=", 1)[1]
    assert first.headers["X-Amz-Content-SHA256"] != second.headers["X-Amz-Content-SHA256"]


async def test_a_signature_made_with_another_secret_does_not_verify(fake_aws, wire):
    dialect = OpenSearchDialect(_sigv4())
    try:
        await dialect.transport.request("GET", "/")
    finally:
        await dialect.transport.close()
    verify_sigv4(wire[0], SECRET_KEY, REGION, "es")
    with pytest.raises(AssertionError):
        verify_sigv4(wire[0], "another-secret", REGION, "es")


async def test_without_aws_region_botocore_is_neither_needed_nor_asked(no_aws, monkeypatch):
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    dialect = OpenSearchDialect(ClientSettings(hosts=[HOST], username="reme", password="pw"))
    try:
        assert dialect.transport.client is not None
    finally:
        await dialect.transport.close()


# ----------------------------------------------------------------------------------------- secrets


async def test_credentials_stay_out_of_settings_and_debug_logs(fake_aws, wire, caplog):
    caplog.set_level(logging.DEBUG)
    settings = _sigv4("aoss")
    dialect = OpenSearchDialect(settings)
    try:
        assert dialect.transport.client is not None
        await dialect.transport.request("PUT", "/notes/_doc/1", {"text": "x"})
    finally:
        await dialect.transport.close()
    assert "CanonicalRequest" in caplog.text  # botocore's DEBUG log of the signing was captured
    assert "x-amz-security-token:***" in caplog.text
    assert _leaks(caplog.text) == []
    assert _leaks(repr(settings) + str(vars(settings))) == []
    assert [f.name for f in fields(settings) if f.name.startswith("aws")] == ["aws_region", "aws_service"]
    assert "aws_region='eu-west-1'" in repr(settings) and "aws_service='aoss'" in repr(settings)


def test_config_reads_region_and_service_from_file_and_env_and_never_secrets(no_aws, tmp_path):
    (tmp_path / "reme-es.yaml").write_text(f"hosts: [{HOST}]\naws_region: us-east-1\n")
    env = {"REME_ES_AWS_SERVICE": "aoss", "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_SESSION_TOKEN": TOKEN}
    settings = load_options(tmp_path, environ=env)
    cs = ClientSettings.from_options(settings.connection)
    assert (settings.connection.aws_region, settings.connection.aws_service) == ("us-east-1", "aoss")
    assert (cs.aws_region, cs.aws_service) == ("us-east-1", "aoss")
    assert (
        load_options(tmp_path, environ={"REME_ES_AWS_REGION": "eu-central-1"}).connection.aws_region == "eu-central-1"
    )
    assert _leaks(repr(settings) + str(settings.model_dump()) + settings.model_dump_json() + repr(cs)) == []

    (tmp_path / "reme-es.yaml").write_text(f"aws_region: us-east-1\naws_secret_access_key: {SECRET_KEY}\n")
    with pytest.raises(ConfigError, match="aws_secret_access_key: unknown option") as err:
        load_options(tmp_path, environ={})
    assert _leaks("".join(traceback.format_exception(err.value))) == []

    with pytest.raises(ConfigError, match="aws_service"):
        load_options(tmp_path / "none", environ={"REME_ES_AWS_SERVICE": "s3"})


# ------------------------------------------------------------------------------------------ refusals


def test_sigv4_is_refused_for_elasticsearch(no_aws):
    with pytest.raises(ConfigError, match=r"only with OpenSearch .*Elasticsearch and Elastic Cloud take"):
        ElasticsearchDialect(_sigv4())
    with pytest.raises(ConfigError, match="only with OpenSearch"):
        connect.make_dialect("elasticsearch", _sigv4())


@pytest.mark.parametrize(
    "auth", [{"username": "reme", "password": "s3cr3t-Pw"}, {"username": "reme"}, {"api_key": "k3y-AbC123"}]
)
def test_sigv4_with_basic_auth_or_api_key_is_refused(auth):
    with pytest.raises(ConfigError, match=r"AWS SigV4; remove username/password and api_key") as err:
        _sigv4(**auth)
    assert "s3cr3t-Pw" not in str(err.value) and "k3y-AbC123" not in str(err.value)


def test_unknown_aws_service_is_refused():
    with pytest.raises(ConfigError, match="aws_service must be one of es, aoss, got 's3'"):
        _sigv4("s3")


async def test_missing_botocore_names_the_extra(fake_aws, monkeypatch):
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    dialect = OpenSearchDialect(_sigv4())
    with pytest.raises(ConfigError, match=r"needs botocore: pip install 'reme-es\[aws\]'"):
        await dialect.transport.request("GET", "/")
    assert dialect.transport._client is None


async def test_missing_credentials_name_the_variables(no_aws):
    dialect = OpenSearchDialect(_sigv4())
    with pytest.raises(ConfigError) as err:
        await dialect.transport.request("GET", "/")
    assert "no AWS credentials were found" in str(err.value)
    assert "AWS_ACCESS_KEY_ID" in str(err.value) and "AWS_PROFILE" in str(err.value)


async def test_half_set_credentials_are_refused_without_echoing_them(no_aws, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    dialect = OpenSearchDialect(_sigv4())
    with pytest.raises(ConfigError, match="no AWS credentials were found") as err:
        await dialect.transport.request("GET", "/")
    assert _leaks("".join(traceback.format_exception(err.value))) == []


async def test_unknown_aws_profile_is_a_config_error(no_aws, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "reme-missing")
    dialect = OpenSearchDialect(_sigv4())
    with pytest.raises(ConfigError, match=r"cannot load AWS credentials for SigV4 signing: .*reme-missing"):
        await dialect.transport.request("GET", "/")


@pytest.mark.parametrize("service,dialect", [("aoss", ServerlessDialect), ("es", OpenSearchDialect)])
async def test_auto_engine_with_sigv4_is_chosen_from_the_settings_without_asking_the_server(
    no_aws, monkeypatch, service, dialect
):
    async def no_lookup(self):
        raise AssertionError("the node was asked which engine it runs (Serverless has no _nodes API)")

    async def no_connect(self, create=True):
        pass

    monkeypatch.setattr(OpenSearchDialect, "local_node", no_lookup)
    monkeypatch.setattr(IndexSet, "connect", no_connect)  # the door binds its part's
    store = await connect.open_store(_sigv4(service), "notes", "auto")
    assert type(store.dialect) is dialect


@pytest.mark.parametrize(
    "node,dialect",
    [
        ({"version": "9.3.2", "build_flavor": "integ-test", "build_type": "zip"}, ElasticsearchDialect),
        ({"version": "2.19.1", "build_type": "zip", "distribution": "opensearch"}, OpenSearchDialect),
    ],
    ids=["elasticsearch", "opensearch"],
)
async def test_auto_engine_without_sigv4_is_the_dialect_that_detects_the_node(monkeypatch, node, dialect):
    async def local_node(self):
        return node

    async def no_connect(self, create=True):
        pass

    monkeypatch.setattr(OpenSearchDialect, "local_node", local_node)
    monkeypatch.setattr(IndexSet, "connect", no_connect)  # the door binds its part's
    store = await connect.open_store(ClientSettings(hosts=["http://127.0.0.1:9"]), "notes", "auto")
    assert type(store.dialect) is dialect


def test_cli_with_aws_region_and_no_hosts_does_not_start_a_local_node(no_aws, tmp_path, monkeypatch):
    from reme_es.server import node

    def no_start(*args, **kwargs):
        raise AssertionError("the managed local node was started")

    monkeypatch.setattr(node, "start", no_start)
    result = CliRunner().invoke(main, ["status", "-w", str(tmp_path), "--aws-region", REGION, "--aws-service", "aoss"])
    assert result.exit_code == 2, result.output
    assert "aws_region is set but no hosts" in result.output


def test_reme_file_store_takes_aws_settings_and_refuses_mixed_auth():
    pytest.importorskip("reme.components", reason="ReMe is not installed: pip install 'reme-es[reme]'")
    from reme_es.reme.backends import OpenSearchFileStore

    store = OpenSearchFileStore(hosts=HOST, aws_region=REGION, aws_service="aoss", embedding_store="")
    assert ClientSettings.from_options(store.options.connection).aws_service == "aoss"
    with pytest.raises(ConfigError, match="remove username/password and api_key"):
        OpenSearchFileStore(hosts=HOST, aws_region=REGION, api_key="k3y-AbC123", embedding_store="")
