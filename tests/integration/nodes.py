"""Reaching the test nodes from the tests' side: a TCP forwarder that can be taken down and brought back, and a check
that a path exists on a node (used by test_cli, test_cli_defects and test_store_target)."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request


def exists(url: str, path: str) -> bool:
    """Whether `GET {url}/{path}` finds something (an index, `_alias/<name>`): False on 404, any other error raises."""
    try:
        urllib.request.urlopen(f"{url}/{path}", timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
        return False
    return True


class Proxy:
    """A TCP forwarder to the node that can be taken down and brought back on the same port."""

    def __init__(self, target: str):
        host, port = target.split("//", 1)[1].rsplit(":", 1)
        self.target = (host, int(port))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._conns: list = []
        self._server = None

    def start(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        self._server = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, server) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._conns += [client, upstream]
            self._serve(client, upstream)

    def _serve(self, client, upstream) -> None:
        """Forward one accepted connection both ways (a subclass may hold or drop what the client sends)."""
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def stop(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self._server.close()
        for c in self._conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass
        self._conns = []
