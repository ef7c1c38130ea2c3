"""A small HTTP server that plays a script: each request gets the next scripted answer, and what was asked is kept.

Used by the golden behaviour cases (`tests/golden/behaviour_cases.json`, replayed by `test_behaviour_cases.py`);
memorie's suite has its own in TypeScript (`memorie/test/scripted-server.ts`) reading the same answers.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEARCH_ANSWER = {
    "took": 1,
    "timed_out": False,
    "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
    "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
}


def kind_of(path: str) -> str:
    """`check` for the cluster check's request, `call` for any other."""
    return "check" if path.startswith("/_cluster/state") else "call"


def bulk_ids(body: bytes) -> list[tuple[str, str]]:
    """(op, id) of every action of an NDJSON bulk body."""
    out = []
    for line in body.decode().splitlines():
        line = line.strip()
        if not line:
            continue
        doc = json.loads(line)
        op = next(iter(doc))
        if op in ("index", "create", "delete", "update") and isinstance(doc[op], dict) and "_id" in doc[op]:
            out.append((op, doc[op]["_id"]))
    return out


def bulk_answer(statuses: list[int], actions: list[tuple[str, str]], types: list[str | None] | None = None) -> dict:
    """A bulk answer with one item per action, in order, with the scripted statuses (and error types: `types`)."""
    items = []
    kinds = types or [None] * len(statuses)
    for status, kind, (op, doc_id) in zip(statuses, kinds, actions, strict=True):
        item: dict = {"_index": "golden-1", "_id": doc_id, "status": status}
        if status >= 300:
            item["error"] = {"type": kind or "scripted_exception", "reason": f"scripted {status} for {doc_id}"}
        items.append({op: item})
    return {"took": 1, "errors": any(s >= 300 for s in statuses), "items": items}


class ScriptedServer:
    """Serves `answers` in order (see the golden file's `answers`); `asked` lists (kind, method, path) of each
    request. `elasticsearch`: every answer says it comes from Elasticsearch (its client checks the product)."""

    def __init__(self, elasticsearch: bool = False):
        self.answers: list[dict] = []
        self.asked: list[tuple[str, str, str]] = []
        self.elasticsearch = elasticsearch
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedServer:  # noqa: PYI034  (a plain class, not subclassed)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        script = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?", 1)[0]
                script.asked.append((kind_of(path), self.command, path))
                answer = script.answers.pop(0) if script.answers else {"status": 599}
                if answer.get("drop"):
                    self.close_connection = True
                    return
                if "delay_s" in answer:  # late: the client's try timeout may give up first
                    time.sleep(answer["delay_s"])
                self._send(*script.render(answer, body))

            def _send(self, status: int, payload: dict, headers: dict[str, str]) -> None:
                try:
                    self._write(status, payload, headers)
                except OSError:  # the client gave up on a late answer and closed the connection
                    self.close_connection = True

            def _write(self, status: int, payload: dict, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if script.elasticsearch:
                    self.send_header("X-Elastic-Product", "Elasticsearch")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        return Handler

    @staticmethod
    def render(answer: dict, body: bytes) -> tuple[int, dict, dict[str, str]]:
        """The status, JSON body and extra headers of one scripted answer to a request with `body`."""
        headers = {"Retry-After": str(answer["retry_after"])} if "retry_after" in answer else {}
        if "uuid" in answer:
            return 200, {"metadata": {"cluster_uuid": answer["uuid"]}}, headers
        if "items" in answer:
            types = answer.get("types") or [answer.get("type")] * len(answer["items"])
            return 200, bulk_answer(answer["items"], bulk_ids(body), types), headers
        status = answer["status"]
        if status < 300:
            return status, SEARCH_ANSWER, headers
        error = {"type": answer.get("type", "scripted_exception"), "reason": f"scripted {status}"}
        return status, {"error": {**error, "root_cause": [error]}, "status": status}, headers
