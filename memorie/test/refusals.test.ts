// Refusals by the cluster's security are not retried (issue 47; the shared `retry.not_retried_types` of
// reme_es/engine_settings.json): a 500 `security_exception` (OpenSearch's answer to an update under document-level
// security), a 403, and a bulk item refused so, are tried once and said plainly; a 429 or a 503 is still retried.
// The real connection code and both official clients in front of a scripted HTTP server; no sleeps are real.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { openSender } from "../src/connection.js";
import { SearchError, type StoreError } from "../src/errors.js";
import { RETRY } from "../src/settings.js";
import { Connection, DEFAULT_BULK, DEFAULT_LIMITS } from "../src/transport.js";
import type { Engine } from "../src/types.js";
import { type Answer, ScriptedServer } from "./scripted-server.js";

const REFUSED = /refused by the cluster's security: security_exception: scripted \d+[^;]*; this user's role may not /;

for (const engine of ["opensearch", "elasticsearch"] as const satisfies readonly Engine[]) {
  describe(`refusals by the cluster's security [${engine}]`, () => {
    let server: ScriptedServer;
    let conn: Connection;
    let closeSender: () => Promise<void>;
    const sleeps: number[] = [];

    before(async () => {
      server = await ScriptedServer.start(engine === "elasticsearch");
      const { send, close } = await openSender(engine, [server.url], { requestTimeoutMs: RETRY.request.requestTimeoutMs });
      closeSender = close;
      conn = new Connection({
        engine, version: "test", refresh: "false", send, errorClass: SearchError, secrets: [], urls: [server.url],
        retry: { retries: RETRY.request.retries, baseMs: RETRY.request.baseMs, capMs: RETRY.request.capMs },
        limits: DEFAULT_LIMITS, bulk: DEFAULT_BULK, sleep: async (ms) => void sleeps.push(ms),
      });
    });
    after(async () => {
      await closeSender();
      await server.close();
    });

    /** Play `answers` to one search; the error it threw (or undefined) and how many requests the server got. */
    async function search(answers: Answer[]): Promise<{ error?: StoreError; asked: number }> {
      server.asked.length = 0;
      sleeps.length = 0;
      server.answers = answers;
      try {
        await conn.request({ method: "POST", path: "/golden/_search", body: { query: { match_all: {} } }, what: "search golden" });
        return { asked: server.asked.length };
      } catch (exc) {
        return { error: exc as StoreError, asked: server.asked.length };
      }
    }

    for (const status of [500, 403]) {
      it(`a ${status} security_exception is tried once and said plainly`, async () => {
        const { error, asked } = await search([{ status, type: "security_exception" }, { status: 200 }]);
        assert.equal(asked, 1);
        assert.deepEqual(sleeps, []);
        assert.ok(error instanceof SearchError);
        assert.equal(error.status, status);
        assert.match(error.message, new RegExp(`^search golden failed: HTTP ${status} ${REFUSED.source}do this here`));
        assert.equal((error.details as { attempts: number }).attempts, 1);
        server.answers = []; // the 200 stays unasked
      });
    }

    for (const status of [429, 503]) {
      it(`a ${status} is still retried`, async () => {
        const { error, asked } = await search([{ status }, { status }, { status: 200 }]);
        assert.equal(error, undefined);
        assert.equal(asked, 3);
        assert.equal(sleeps.length, 2);
      });
    }

    it("a bulk item refused with security_exception is sent once and reported plainly; a 503 item beside it is retried", async () => {
      server.asked.length = 0;
      sleeps.length = 0;
      server.answers = [{ items: [500, 503, 201], types: ["security_exception", null, null] }, { items: [201] }];
      const ops = ["a", "b", "c"].map((id) => ({ action: "index" as const, id, doc: { n: id } }));
      const failures = await conn.bulk("golden", ops, "load golden");
      assert.equal(server.asked.length, 2);
      assert.equal(sleeps.length, 1);
      assert.deepEqual(failures.map((f) => [f.id, f.status]), [["a", 500]]);
      assert.match(failures[0]?.reason ?? "", new RegExp(`^${REFUSED.source}write here`));
      assert.throws(() => conn.throwBulkFailures("load golden", failures, 3), (e: StoreError) => {
        assert.match(e.message, /^load golden: 1 of 3 items failed \(first: a: HTTP 500 refused by the cluster's security: /);
        return true;
      });
    });

    it("a whole bulk request refused with a 500 security_exception is one round, each item reported once", async () => {
      server.asked.length = 0;
      sleeps.length = 0;
      server.answers = [{ status: 500, type: "security_exception" }];
      const ops = ["a", "b"].map((id) => ({ action: "index" as const, id, doc: { n: id } }));
      const failures = await conn.bulk("golden", ops, "load golden");
      assert.equal(server.asked.length, 1);
      assert.deepEqual(sleeps, []);
      assert.deepEqual(failures.map((f) => [f.id, f.status]), [["a", 500], ["b", 500]]);
      assert.match(failures[1]?.reason ?? "", new RegExp(`^${REFUSED.source}write here`));
    });
  });
}
