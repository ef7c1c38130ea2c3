"""`reme-es ui`'s guard without a cluster (Starlette's test client): read-only by default, writes need the run's token
cookie and the CSRF value, a foreign origin is refused, a remote bind needs the token on every page. A write the guard
lets through reaches the page, which refuses a wrong typed confirmation without touching the cluster."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

from reme_es.ui.app import COOKIE, UiConfig, build_app  # noqa: E402

TOKEN = "s3cret-token"


def _client(**flags) -> tuple[TestClient, UiConfig]:
    config = UiConfig(settings=None, client=(None, "opensearch"), prefix="reme", token=TOKEN, **flags)  # type: ignore[arg-type]
    return TestClient(build_app(config), base_url="http://127.0.0.1:8765", follow_redirects=False), config


def _forget(client: TestClient, config: UiConfig, cookie: str | None, csrf: str | None = None, **headers):
    if cookie is not None:
        client.cookies.set(COOKIE, cookie)
    form = {"confirm": "wrong", "path": ""}
    if csrf is not None:
        form["csrf"] = csrf
    return client.post("/w/ws-1/forget", data=form, headers=headers)


def test_a_read_only_run_refuses_every_write_even_with_the_token():
    client, config = _client()
    refused = _forget(client, config, TOKEN, config.csrf())
    assert refused.status_code == 403 and "read-only" in refused.text


def test_a_write_needs_the_token_and_the_csrf_value_and_the_same_origin():
    client, config = _client(allow_writes=True)
    assert _forget(client, config, None, config.csrf()).status_code == 403
    client, config = _client(allow_writes=True)
    assert _forget(client, config, "not-the-token", config.csrf()).status_code == 403
    assert _forget(client, config, TOKEN, None).status_code == 403
    assert _forget(client, config, TOKEN, "0" * 64).status_code == 403
    assert _forget(client, config, TOKEN, config.csrf(), origin="http://evil.example").status_code == 403
    passed = _forget(client, config, TOKEN, config.csrf(), origin="http://127.0.0.1:8765")
    assert passed.status_code == 400 and "type" in passed.text and "nothing forgotten" in passed.text


def test_the_token_link_sets_an_http_only_strict_cookie_and_a_wrong_one_is_refused():
    client, _ = _client()
    assert client.get("/?token=nope").status_code == 403
    opened = client.get("/?token=" + TOKEN)
    assert opened.status_code == 303 and opened.headers["location"] == "http://127.0.0.1:8765/"
    cookie = opened.headers["set-cookie"].lower()
    assert f"{COOKIE}={TOKEN}".lower() in cookie and "httponly" in cookie and "samesite=strict" in cookie


def test_a_remote_run_needs_the_token_on_every_page():
    client, _ = _client(remote=True)
    assert client.get("/w/ws-1/forget").status_code == 403
    client.cookies.set(COOKIE, TOKEN)
    page = client.get("/w/ws-1/forget")
    assert page.status_code == 200 and TOKEN not in page.text  # the page carries the CSRF value, never the token


def test_the_csrf_value_is_per_token_and_not_the_token():
    a = UiConfig(settings=None, client=(None, ""), prefix="p", token="a")  # type: ignore[arg-type]
    b = UiConfig(settings=None, client=(None, ""), prefix="p", token="b")  # type: ignore[arg-type]
    assert a.csrf() != b.csrf() and a.csrf() != "a" and len(a.csrf()) == 64
