"""A secured Elasticsearch 9 node (x-pack security, TLS on HTTP and transport, file-realm users): reme-es connects
with the right CA, fails with advice without one, hides a wrong password, and stays inside a prefix-limited role.
An API key created through `POST /_security/api_key`, limited to one prefix, works inside it, gets 403 outside,
and once invalidated (or with a wrong secret) gives a 401 that does not carry the key. Per-workspace access
(`reme-es access`, tests/reliability/access_cases.py) runs on the same node: on its basic licence `access grant`
refuses, naming the licence and the trial; then the cases' fixture starts the 30-day trial (document-level security)
and the two users' grants are checked on every read path. A node has one trial, so the refusal runs first (file
order; run after the trial, it puts the node back on basic).

API keys live in the `.security` system index, whose `email` analyzer needs four analysis-common components the
integ-test distribution lacks; the launcher adds them with reme-es' own test analysis plugin
(reme_es.server.es_plugin), whose chain is checked here token by token.

The node is started the way `reme-es server start --secure --flavour elasticsearch-9` starts one
(reme_es.server.secure: generated certificates, file-realm users whose passwords are stored as `{PBKDF2}` hashes),
with the prefix writer added and without the trial; `server status` and `server env` are checked on it.
"""

from __future__ import annotations

import asyncio
import base64
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.errors import AuthError, RequestFailed
from reme_es.server import secure
from reme_es.store.connect import make_dialect, open_store
from reme_es.testing.data import chunk, file_with
from tests.containers.early import EARLY, Call, needs

from .access_cases import AccessCases, cli, granted, memorie_granted  # noqa: F401 - the class fixtures of AccessCases
from .access_cases import raw as access_raw
from .access_more_cases import AccessRoundTwo
from .secured_cases import ADMIN, ADMIN_PW, WRITER, WRITER_PW, SecuredCases, prefix, secured_node
from .ui_grant_cases import UiGrantCases
from .walkthrough_cases import check_status_and_env, node_at

NAME = f"rsec-{uuid.uuid4().hex[:6]}"

# The privileges the prefix role needs for connect, upsert, keyword search and drop (verified by these tests).
PREFIX_ROLE = {
    "cluster": ["monitor", "cluster:admin/analyze"],  # POST /_analyze without an index is a cluster action on ES
    "indices": [
        {
            "names": ["rsec-*"],
            "privileges": [
                "create_index",
                "delete_index",
                "view_index_metadata",
                "read",
                "write",
                "maintenance",
                "indices:admin/aliases",  # creating an index together with its alias (ES index privilege `manage`)
            ],
        }
    ],
}


# The `email` filter of the `.security` index (x-pack-security's SecuritySystemIndices).
SECURITY_EMAIL_PATTERNS = ["([^@]+)", "(\\p{L}+)", "(\\d+)", "@(.+)"]


@contextmanager
def secured_node_es() -> Iterator[tuple[str, str]]:
    """(url, ca path) of a secured node, stopped and removed at exit."""
    extra = secure.Extra({WRITER: WRITER_PW}, {"reme_prefix": PREFIX_ROLE}, {"reme_prefix": [WRITER]})
    with secured_node("elasticsearch-9", NAME, extra) as url_and_ca:
        yield url_and_ca


# started in the background ahead of the tests (tests/containers/early.py)
SECURED = ("secured-elasticsearch-9", Call(__name__, "secured_node_es"))
needs(__name__, "secured", lambda item: SECURED)


@pytest.fixture(scope="module")
def secured():
    """(url, ca path) of a secured node; stopped at the end of the module even when a test fails."""
    with EARLY.take(*SECURED) as url_and_ca:
        yield url_and_ca


async def _roundtrip(settings: ClientSettings, prefix: str) -> None:
    """Connect, upsert one file, find it by keyword, drop the prefix."""
    store = await open_store(settings, prefix, "elasticsearch")
    try:
        c = chunk("notes/tls.md", f"lighthouse keeper {prefix}")
        outcome = await store.upsert([file_with("notes/tls.md", [c])])
        # a new file of one chunk and no links: the chunk and the file doc (a new file's placeholder is not counted)
        assert (outcome.succeeded, outcome.failures) == (2, [])
        hits = await store.keyword_search("lighthouse", 5)
        assert [h.chunk.id for h in hits] == [c.id]
        await store.drop()
    finally:
        await store.close()


class TestSecuredElasticsearch(SecuredCases):
    """The shared secured-node cases on elasticsearch."""

    ENGINE = "elasticsearch"
    roundtrip = staticmethod(_roundtrip)


async def test_engine_auto_detection_works_over_tls(secured):
    url, ca = secured
    store = await open_store(ClientSettings([url], username=ADMIN, password=ADMIN_PW, ca_certs=ca), prefix())
    try:
        assert store.dialect.engine == "elasticsearch"
        await store.drop()
    finally:
        await store.close()


# ------------------------------------------------------------------------------------------- API keys


async def _request(settings: ClientSettings, method: str, path: str, body: dict | None = None) -> dict:
    dialect = make_dialect("elasticsearch", settings)
    try:
        return await dialect.transport.request(method, path, body)
    finally:
        await dialect.transport.close()


def _admin(secured) -> ClientSettings:
    url, ca = secured
    return ClientSettings([url], username=ADMIN, password=ADMIN_PW, ca_certs=ca)


async def _create_api_key(secured, key_prefix: str) -> dict:
    """An API key made by the admin whose role is the prefix role narrowed to `<key_prefix>-*`: id, api_key, encoded."""
    indices = [{**PREFIX_ROLE["indices"][0], "names": [f"{key_prefix}-*"]}]
    body = {
        "name": f"reme-{key_prefix}",
        "expiration": "1h",
        "role_descriptors": {"reme_prefix": {**PREFIX_ROLE, "indices": indices}},
    }
    key = await _request(_admin(secured), "POST", "/_security/api_key", body)
    assert base64.b64decode(key["encoded"]).decode() == f"{key['id']}:{key['api_key']}"
    return key


def _key_settings(secured, encoded: str) -> ClientSettings:
    url, ca = secured
    return ClientSettings([url], api_key=encoded, ca_certs=ca, max_retries=0)


async def test_security_index_analysis_chain_gives_the_analysis_common_tokens(secured):
    body = {
        "tokenizer": "uax_url_email",
        "filter": [
            {"type": "pattern_capture", "preserve_original": True, "patterns": SECURITY_EMAIL_PATTERNS},
            "lowercase",
            "unique",
        ],
        "text": "Jo.Smith42@Example.COM jo see https://x.org/jo",
    }
    tokens = (await _request(_admin(secured), "POST", "/_analyze", body))["tokens"]
    assert [(t["token"], t["position"]) for t in tokens] == [
        ("jo.smith42@example.com", 0),
        ("jo.smith42", 0),
        ("jo", 0),
        ("smith", 0),
        ("42", 0),
        ("example.com", 0),
        ("example", 0),
        ("com", 0),
        ("see", 1),  # the second "jo" is dropped by `unique`, its position with it
        ("https://x.org/jo", 2),
        ("https", 2),
        ("x", 2),
        ("org", 2),  # its "jo" came earlier
    ]


async def test_api_key_created_through_the_api_works_inside_its_prefix(secured):
    key_prefix = prefix()
    key = await _create_api_key(secured, key_prefix)
    settings = _key_settings(secured, key["encoded"])
    me = await _request(settings, "GET", "/_security/_authenticate")
    assert (me["authentication_type"], me["api_key"]["id"], me["username"]) == ("api_key", key["id"], ADMIN)
    await _roundtrip(settings, key_prefix)
    assert key["api_key"] not in repr(settings) and key["encoded"] not in repr(settings)


async def test_api_key_gets_403_outside_its_prefix(secured, debug_log):
    key = await _create_api_key(secured, prefix())
    other = prefix()  # inside the admin's and the writer role's reach, outside the key's
    settings = _key_settings(secured, key["encoded"])
    with pytest.raises(AuthError) as err:
        await open_store(settings, other, "elasticsearch")
    message = str(err.value)
    assert "the server answered 403 (" in message
    assert f"{other}-" in message
    assert f"API key id [{key['id']}]" in message
    assert "and that the role may use this index prefix" in message
    full = "".join(traceback.format_exception(err.value)) + repr(settings) + "\n".join(debug_log)
    assert [s for s in (key["api_key"], key["encoded"]) if s in full] == []


@pytest.mark.parametrize("case", ["invalidated", "wrong_secret"])
async def test_bad_api_key_is_a_401_auth_error_without_the_key(secured, debug_log, case):
    key = await _create_api_key(secured, prefix())
    if case == "invalidated":
        gone = await _request(_admin(secured), "DELETE", "/_security/api_key", {"ids": [key["id"]]})
        assert gone["invalidated_api_keys"] == [key["id"]]
        secret = key["api_key"]
    else:
        secret = "Wr0ng" + key["api_key"][5:]
    encoded = base64.b64encode(f"{key['id']}:{secret}".encode()).decode()
    settings = _key_settings(secured, encoded)
    debug_log.clear()
    with pytest.raises(AuthError) as err:
        await open_store(settings, prefix(), "elasticsearch")
    message = str(err.value)
    assert message.startswith("GET /_nodes/_local/plugins: the server answered 401 (")
    assert "check the username/password or API key" in message
    assert any("401" in record for record in debug_log)  # the client did log the refused request
    full = "".join(traceback.format_exception(err.value)) + repr(settings) + "\n".join(debug_log)
    assert [s for s in (secret, encoded, key["api_key"], key["encoded"]) if s in full] == []


# ------------------------------------------------------------------------------------------- reme-es access


async def test_access_grant_on_a_basic_licence_refuses_naming_the_licence_and_the_trial(secured):
    """On the basic licence (the node starts on it; put back if the access class below started the trial first),
    `reme-es access grant` refuses before it makes anything, names the licence and what to do."""
    url, ca = secured
    admin = _admin(secured)
    if (await _request(admin, "GET", "/_license"))["license"]["type"] != "basic":
        await access_raw(admin, "POST", "/_license/start_basic", params={"acknowledge": "true"}, engine="elasticsearch")
    key, set_ = f"basic-{uuid.uuid4().hex[:6]}", prefix()
    args = ("access", "grant", "--index-prefix", set_, "--workspace-key", key, "--user", "x")
    result = await asyncio.to_thread(cli, url, ca, ADMIN, ADMIN_PW, *args)  # the CLI runs its own event loop
    assert result.exit_code == 1, result.output
    assert result.output.startswith(
        "error: document-level security needs a platinum, enterprise or trial licence; this cluster's licence is "
        "basic (active). Nothing was granted. Start a 30-day trial with `POST _license/start_trial?acknowledge=true`"
    ), result.output
    assert "give each workspace an index set of its own (--index-prefix)" in result.output
    with pytest.raises(RequestFailed) as err:  # nothing was made
        await _request(admin, "GET", f"/_security/role/reme-es-{set_}-{key}")
    assert err.value.status == 404


class TestAccessElasticsearch(AccessCases, AccessRoundTwo, UiGrantCases):
    """Per-workspace access (`reme-es access`) on this node, once `granted` has started its trial licence (the test
    above, on basic, runs before it)."""

    ENGINE = "elasticsearch"
    FLAVOUR = "elasticsearch-9"


def test_server_status_and_env_name_the_secured_node(secured):
    url, ca = secured
    check_status_and_env(node_at(url), url, ca)  # NAME of the holder process that started it ahead differs
