"""`reme-es ui` started with a grantee's credentials (issue 48), on the secured nodes and the `granted` fixture of
access_cases.py: the app acts as the user it was started as, so document-level security decides what it shows. Ana
(a read grant on her workspace) sees her workspace and her note, and nothing of bob's: not his workspace key on the
overview, not his note on his workspace's pages or in a search of them; a Memorie tenant's page says she may not
read Memorie's indices (403), not a server error."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.parse
import urllib.request

from tests.ui.conftest import UiRun

from .access_cases import USER_PW


def _page(url: str) -> tuple[int, str]:
    """(status, text) of a GET; an HTTP error's status and body too."""
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class UiGrantCases:
    """A grantee's `reme-es ui` shows only what the grant lets that user read."""

    async def test_a_grantees_ui_shows_her_workspace_and_nothing_of_another(self, granted, tmp_path):
        g = granted
        ana, bob = g.key["ana"], g.key["bob"]
        env = {"REME_ES_CA_CERTS": g.ca, "REME_ES_USERNAME": ana, "REME_ES_PASSWORD": USER_PW}
        run = await asyncio.to_thread(UiRun, ["--hosts", g.url, "--index-prefix", g.prefix], tmp_path, env)
        try:
            pages = {
                what: await asyncio.to_thread(_page, f"{run.base}{path}")
                for what, path in (
                    ("overview", "/"),
                    ("ana files", f"/w/{ana}"),
                    ("ana search", f"/w/{ana}/search?q=heron&mode=keyword"),
                    ("bob files", f"/w/{bob}"),
                    ("bob file", f"/w/{bob}/file?path=notes/day.md"),
                    ("bob search", f"/w/{bob}/search?q=heron&mode=keyword"),
                    ("memorie tenant", "/m/acme"),
                )
            }
        finally:
            await asyncio.to_thread(run.stop)
        status, overview = pages["overview"]
        assert status == 200 and ana in overview, overview[:2000]
        assert bob not in overview, "the overview of ana's UI names bob's workspace"
        assert pages["ana files"][0] == 200 and "notes/day.md" in pages["ana files"][1]
        assert "heron secret of ana" in pages["ana search"][1], pages["ana search"][1][:2000]
        for what in ("bob files", "bob file", "bob search"):
            assert "secret of bob" not in pages[what][1], f"{what} of ana's UI shows bob's note"
        assert "notes/day.md" not in pages["bob files"][1], "ana's UI lists bob's file"
        status, tenant = pages["memorie tenant"]  # no grant on Memorie's indices: said, not a 500
        assert status == 403 and "may not read Memorie&#39;s indices" in tenant, (status, tenant[:2000])
