// What a store says when the URL does not reach a working search node: a web server that is not one, a server
// that answers 404, a server that echoes the Authorization header in its 401, a server that never answers. These
// servers are not search nodes by definition, so they are small local servers of this file (the stores' behaviour
// on real nodes is in the other test files).
import assert from "node:assert/strict";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import { inspect } from "node:util";
import { after, describe, it } from "node:test";

import { type Auth, createSearchStore, createVectorStore } from "../src/index.js";
import { rejectsWithCode } from "../src/contract/common.js";

const servers: Server[] = [];
const sockets: Socket[] = [];
after(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) await new Promise((r) => s.close(r));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.on("connection", (s: Socket) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const httpServer = (handler: (req: IncomingMessage, res: ServerResponse) => void) => listen(createHttpServer(handler));
const quick = { retry: { retries: 1, baseMs: 1 } };

/** The message, the inspected error and its JSON: everything a log could show. */
function shown(err: Error): string[] {
  return [err.message, inspect(err, { depth: null }), JSON.stringify(err)];
}

describe("a URL that does not reach a search node", () => {
  it("a web server that is not a node: says so, with no empty version", async () => {
    const url = await httpServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html><body>It works!</body></html>"));
    const err = await rejectsWithCode(() => createSearchStore({ url, indexPrefix: "p", ...quick }), "SEARCH_ERROR");
    assert.equal(
      err.message,
      `${url} does not answer like an OpenSearch or Elasticsearch node: GET /_nodes/_local gave HTTP 200 without a ` +
        'node version ("<html><body>It works!</body></html>"); check `url`',
    );
  });

  it("a server that answers 404 without a body: HTTP 404 once, and what to check", async () => {
    const url = await httpServer((_req, res) => res.writeHead(404).end());
    const err = await rejectsWithCode(() => createVectorStore({ url, indexPrefix: "p", ...quick }), "VECTOR_STORE_ERROR");
    assert.equal(
      err.message,
      `ask ${url} for its version failed: HTTP 404 (no error body); is it an OpenSearch or Elasticsearch node? check \`url\``,
    );
  });

  it("a 401 that echoes the Authorization header shows no credential", async () => {
    const url = await httpServer((req, res) => {
      const body = { error: { type: "security_exception", reason: `unable to authenticate with ${req.headers.authorization}` }, status: 401 };
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    const password = "pw-Secret-4711";
    const cases: { auth?: Auth; url?: string; secrets: string[] }[] = [
      { auth: { username: "alice", password }, secrets: [password, Buffer.from(`alice:${password}`).toString("base64")] },
      { auth: { apiKey: "a2V5LWlkOmtleS1zZWNyZXQ=" }, secrets: ["a2V5LWlkOmtleS1zZWNyZXQ="] },
      { auth: { bearer: "tok-Secret-0815" }, secrets: ["tok-Secret-0815"] },
    ];
    const inUrl = new URL(url);
    inUrl.username = "bob";
    inUrl.password = password;
    cases.push({ url: inUrl.toString(), secrets: [password, Buffer.from(`bob:${password}`).toString("base64")] });
    for (const c of cases) {
      const err = await rejectsWithCode(
        () => createSearchStore({ url: c.url ?? url, indexPrefix: "p", auth: c.auth, ...quick }),
        "SEARCH_ERROR",
        /HTTP 401 security_exception: unable to authenticate with (Basic|ApiKey|Bearer) \*\*\* \(check `auth`\)/,
      );
      for (const text of shown(err)) for (const secret of c.secrets) assert.ok(!text.includes(secret), text);
    }
  });

  it("a server that accepts connections and never answers fails the call at callTimeoutMs", async () => {
    const url = await listen(createTcpServer(() => {}));
    const started = Date.now();
    await rejectsWithCode(
      () => createSearchStore({ url, indexPrefix: "p", requestTimeoutMs: 400, callTimeoutMs: 1000 }),
      "SEARCH_ERROR",
      /^ask \S+ for its version failed: no success within 1000 ms \(callTimeoutMs\) after [23] attempt\(s\); last: TimeoutError/,
    );
    const took = Date.now() - started;
    // Without the cap, the 7 tries of 400 ms and their backoff would take over 3 s.
    assert.ok(took >= 400 && took < 2500, `failed after ${took} ms`);
  });
});
