"""`reme-es server start --secure` without a JVM: which flavour it starts, what it keeps in the node folder's
secret/ (an Elasticsearch node's: no Java needed to hash its passwords), and what it refuses before any start.
The secured nodes themselves start in tests/reliability (test_secured*.py, test_cluster_cli.py)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from click.testing import CliRunner

from reme_es.cli import main
from reme_es.core.errors import ServerError
from reme_es.server import secure
from reme_es.server.info import NodeInfo, node_dir, write_node


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REME_ES_HOME", str(tmp_path))
    return tmp_path


def test_secure_starts_the_secured_flavour_of_the_one_asked_for():
    assert [secure.secured_flavour(f) for f in (None, "opensearch-2.19", "opensearch-3", "elasticsearch-9")] == [
        "opensearch-2.19-security",
        "opensearch-2.19-security",
        "opensearch-3.4-security",
        "elasticsearch-9",
    ]
    assert secure.secured_flavour("opensearch-3.4-security") == "opensearch-3.4-security"
    with pytest.raises(ServerError, match="no secured flavour of 'solr'; choose one of opensearch-2.19, opensearch-3"):
        secure.secured_flavour("solr")


def _pbkdf2_matches(stored: str, password: str) -> bool:
    cost, salt, key = stored.removeprefix("{PBKDF2}").split("$")
    made = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(salt), int(cost), dklen=32)
    return made == base64.b64decode(key)


def test_an_elasticsearch_node_keeps_its_material_private_and_no_password_in_clear(home):
    secure.share("elasticsearch-9", ["t-1", "t-2"])  # what `server cluster start --secure` does before the starts
    for name in ("t-1", "t-2"):
        secret = node_dir(name) / "secret"
        assert sorted(p.name for p in secret.iterdir()) == ["admin.password", "ca.crt", "security.json"]
        modes = {p.name: p.stat().st_mode & 0o777 for p in secret.iterdir()}
        assert (secret.stat().st_mode & 0o777, modes) == (
            0o700,
            {"admin.password": 0o600, "ca.crt": 0o644, "security.json": 0o600},
        )
    password = secure.credentials("t-1").password
    assert secure.credentials("t-2") == secure.credentials("t-1").__class__(
        ca_certs=str(node_dir("t-2") / "secret" / "ca.crt"), username="admin", password=password
    )
    kept = json.loads((node_dir("t-1") / "secret" / "security.json").read_text())
    assert password not in json.dumps(kept) and len(password) >= 20
    files = {rel: base64.b64decode(b64).decode() for rel, b64 in kept["files"].items()}
    assert sorted(files) == ["certs/ca.crt", "certs/node.crt", "certs/node.key", "roles.yml", "users", "users_roles"]
    user, stored = files["users"].strip().split(":", 1)
    assert user == "admin" and _pbkdf2_matches(stored, password) and not _pbkdf2_matches(stored, password + "x")
    assert files["users_roles"] == "superuser:admin\n"
    assert kept["settings"]["xpack.security.enabled"] is True
    assert kept["settings"]["xpack.security.http.ssl.enabled"] is True
    assert secure.describe("t-1") == {
        "username": "admin",
        "password_file": str(node_dir("t-1") / "secret" / "admin.password"),
        "ca_certs": str(node_dir("t-1") / "secret" / "ca.crt"),
    }


def test_secure_refuses_a_node_that_holds_unsecured_data_and_another_flavour(home, monkeypatch):
    def no_start(*args, **kwargs):
        raise AssertionError("a refused start reached the launcher")

    monkeypatch.setattr(secure.node, "start", no_start)
    (node_dir("plain") / "data" / "nodes").mkdir(parents=True)
    write_node(
        NodeInfo("plain", "opensearch-3", "opensearch", "3.5.0", 0, 9999, 9998, "/nowhere", str(node_dir("plain")))
    )
    with pytest.raises(ServerError, match="node 'plain' holds the data of an unsecured node; start the secured node"):
        secure.start(None, "plain")
    assert not (node_dir("plain") / "secret").exists()
    secure.share("elasticsearch-9", ["es"])
    with pytest.raises(ServerError, match="node 'es' is a secured elasticsearch-9 node; start it without --flavour"):
        secure.start("opensearch-2.19", "es")


def test_server_env_of_a_node_never_started_says_how_to_start_it(home):
    result = CliRunner().invoke(main, ["server", "env", "--name", "nobody"], env={"REME_ES_HOME": str(home)})
    assert result.exit_code == 1
    assert "node 'nobody' was never started: reme-es server start --name nobody" in result.output


def test_the_launcher_refuses_to_start_a_secured_node_without_its_security(home):
    """A secured node started by a path that does not know it (ReMe's managed node, an old script) would start
    without its security config (Elasticsearch: with security off, on its data); the launcher refuses first."""
    from reme_es.server import node

    secure.share("elasticsearch-9", ["default"])
    with pytest.raises(
        ServerError, match="node 'default' is a secured node: start it with `reme-es server start --name"
    ):
        node.start("elasticsearch-9", "default")
    assert not (node_dir("default") / "config").exists()
