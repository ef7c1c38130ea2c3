// Bulk loads (src/bulk-load.ts): the scheduled refresh is off during indexMany/upsertMany and between the parts of a
// load (issue 53), restored a while after the last part, or by refresh()/close(), also when the load fails; pages go
// out `concurrency` at a time. First with a scripted sender (the request order), then on the real nodes (the setting
// restored on the node after a failed load, the stored part kept).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { RESTORE_AFTER_MS, restoreScheduledRefresh, sendPages, withoutScheduledRefresh } from "../src/bulk-load.js";
import { Connection } from "../src/connection.js";
import { makeMemory } from "../src/contract/common.js";
import { SearchError, VectorStoreError } from "../src/errors.js";
import { createSearchStore, createVectorStore } from "../src/index.js";
import type { SendParams } from "../src/transport.js";
import { dropAfterSuite, freshPrefix, targets } from "./targets.js";

function scripted(interval: string | null, status = 200) {
  const seen: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const send = async (p: SendParams) => {
    if (p.path === "/_bulk") {
      const n = (p.body as string).trim().split("\n").length / 2;
      seen.push(`bulk ${n}`);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return { status: 200, body: { items: Array.from({ length: n }, () => ({ index: { status: 201 } })) } };
    }
    seen.push(`${p.method} ${p.path} ${p.body === undefined ? "" : JSON.stringify(p.body)}`.trim());
    if (status !== 200) return { status, body: { error: { type: "security_exception", reason: "no" } } };
    const settings = interval === null ? {} : { index: { refresh_interval: interval } };
    return { status: 200, body: p.method === "GET" ? { "i-v1": { settings } } : { acknowledged: true } };
  };
  const conn = new Connection({
    engine: "opensearch", version: "3.3.0", refresh: "false", send, errorClass: SearchError, secrets: [],
    retry: { retries: 0, baseMs: 1, capMs: 1 },
  });
  return { conn, seen, maxInFlight: () => maxInFlight };
}

const ops = (n: number) => Array.from({ length: n }, (_, i) => ({ action: "index" as const, id: `d${i}`, doc: { id: `d${i}` } }));
const GET = "GET /i/_settings/index.refresh_interval";
const put = (v: string | null) => `PUT /i/_settings {"index":{"refresh_interval":${JSON.stringify(v)}}}`;

describe("bulk load, scripted node", () => {
  it("turns the scheduled refresh off, sends pages two at a time, keeps it off until restored, then the interval read", async () => {
    const { conn, seen, maxInFlight } = scripted("1s");
    const { failures, total } = await withoutScheduledRefresh(conn, "i", null, () =>
      sendPages(conn, "i", ops(2500), (n) => `load ${n}`, { pageSize: 1000, concurrency: 2 }),
    );
    assert.deepEqual([failures, total], [[], 2500]);
    assert.deepEqual(seen, [GET, put("-1"), "bulk 1000", "bulk 1000", "bulk 500"]);
    assert.equal(maxInFlight(), 2);
    await restoreScheduledRefresh(conn, "i");
    assert.deepEqual(seen.slice(5), [put("1s")]);
    await restoreScheduledRefresh(conn, "i");
    assert.equal(seen.length, 6, "restored once");
  });

  it("a load in parts turns it off once and on once; the timer restores it after the last part", async () => {
    const { conn, seen } = scripted("1s");
    for (let part = 0; part < 3; part++) {
      await withoutScheduledRefresh(conn, "i", null, () => sendPages(conn, "i", ops(3), () => "load"), 30);
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.deepEqual(seen, [GET, put("-1"), "bulk 3", "bulk 3", "bulk 3"]);
    await new Promise((r) => setTimeout(r, 80));
    assert.deepEqual(seen.slice(5), [put("1s")]);
    assert.ok(RESTORE_AFTER_MS >= 1000, "the default gives the caller time to build the next part");
  });

  it("an index whose part ended is not restored while another load of the process runs (memories beside vectors)", async () => {
    const { conn, seen } = scripted("1s");
    const other = scripted("1s");
    let release = () => {};
    const slow = new Promise<void>((r) => (release = r));
    // the vectors' part outlives the memories' part by several restore delays
    const vectors = withoutScheduledRefresh(other.conn, "i", null, async () => slow, 20);
    await withoutScheduledRefresh(conn, "i", null, () => sendPages(conn, "i", ops(3), () => "load"), 20);
    await new Promise((r) => setTimeout(r, 90));
    assert.deepEqual(seen, [GET, put("-1"), "bulk 3"], "still off: the other load runs");
    release();
    await vectors;
    await new Promise((r) => setTimeout(r, 90));
    assert.deepEqual(seen.slice(3), [put("1s")], "put back once both loads ended");
    assert.deepEqual(other.seen.slice(2), [put("1s")]);
  });

  it("restores after a failed load; a leftover -1 is restored to the fallback; none set: the node's default", async () => {
    const failing = scripted("5s");
    const broken = function* () {
      yield* ops(1500);
      throw new Error("bad item 1500");
    };
    await assert.rejects(
      withoutScheduledRefresh(failing.conn, "i", "1s", () => sendPages(failing.conn, "i", broken(), () => "load", { pageSize: 1000 })),
      /bad item 1500/,
    );
    await restoreScheduledRefresh(failing.conn, "i");
    assert.deepEqual(failing.seen, [GET, put("-1"), "bulk 1000", put("5s")]);
    const leftover = scripted("-1");
    await withoutScheduledRefresh(leftover.conn, "i", "1s", () => sendPages(leftover.conn, "i", ops(3), () => "load"));
    await restoreScheduledRefresh(leftover.conn, "i");
    assert.deepEqual(leftover.seen, [GET, put("-1"), "bulk 3", put("1s")]);
    const unset = scripted(null);
    await withoutScheduledRefresh(unset.conn, "i", "1s", () => sendPages(unset.conn, "i", ops(3), () => "load"));
    await restoreScheduledRefresh(unset.conn, "i");
    assert.deepEqual(unset.seen, [GET, put("-1"), "bulk 3", put(null)]);
  });

  it("a user who may not manage the index (403) still loads, with the scheduled refresh left on", async () => {
    const { conn, seen } = scripted("1s", 403);
    await withoutScheduledRefresh(conn, "i", "1s", () => sendPages(conn, "i", ops(3), () => "load"));
    await restoreScheduledRefresh(conn, "i");
    assert.deepEqual(seen, [GET, "bulk 3"]);
  });

  it("two loads of one index at once: one suspension; a restore while one runs waits for none and sends nothing", async () => {
    const { conn, seen } = scripted("1s");
    const load = () => withoutScheduledRefresh(conn, "i", null, () => sendPages(conn, "i", ops(2), () => "load"));
    const both = Promise.all([load(), load()]);
    await restoreScheduledRefresh(conn, "i");
    await both;
    assert.deepEqual(seen, [GET, put("-1"), "bulk 2", "bulk 2"]);
    await restoreScheduledRefresh(conn, "i", true); // the index was dropped: nothing to put back
    assert.equal(seen.length, 4);
  });
});

async function intervalOf(url: string, alias: string): Promise<unknown> {
  const body: any = await (await fetch(`${url}/${alias}/_settings/index.refresh_interval`)).json();
  return (Object.values(body)[0] as any)?.settings?.index?.refresh_interval ?? null;
}

for (const { engine, url } of targets) {
  describe(`bulk load on ${engine} ${url}`, () => {
    const track = dropAfterSuite();

    it("a failed indexMany/upsertMany restores the refresh interval; what was sent before the failure is kept", async () => {
      const prefix = freshPrefix("bulk");
      const search = track(await createSearchStore({ url, indexPrefix: prefix }));
      const vectors = track(await createVectorStore({ url, indexPrefix: prefix, dimensions: 4 }));
      const vAlias = `${prefix}-memorie-vectors`;
      assert.deepEqual([await intervalOf(url, search.info.alias), await intervalOf(url, vAlias)], ["1s", "1s"]);
      const ms = Array.from({ length: 260 }, (_, i) => makeMemory({ id: `m${String(i).padStart(3, "0")}`, content: `bulk cedar ${i}` }));
      const bad = { ...ms[250]!, content: undefined as unknown as string };
      await assert.rejects(search.indexMany([...ms.slice(0, 250), bad], { pageSize: 100 }), (e: SearchError) => {
        assert.match(e.message, /memory m250 has no string content/);
        return true;
      });
      assert.equal(await intervalOf(url, search.info.alias), "-1", "off until the next part or the timer");
      await new Promise((r) => setTimeout(r, RESTORE_AFTER_MS + 500));
      assert.equal(await intervalOf(url, search.info.alias), "1s", "restored by the timer");
      assert.deepEqual(await search.listIds(), ms.slice(0, 200).map((m) => m.id), "the two pages sent before are stored");
      const entries = ms.map((m, i) => ({ id: m.id, embedding: i === 150 ? [1, 0, 0] : [1, i, 0, 1] }));
      await assert.rejects(vectors.upsertMany(entries, { pageSize: 100 }), (e: VectorStoreError) => {
        assert.match(e.message, /upsert m150: dimension mismatch/);
        return true;
      });
      await vectors.refresh();
      assert.equal(await intervalOf(url, vAlias), "1s", "restored by refresh()");
      assert.equal((await vectors.listIds()).length, 100);
    });

    it("a load after one that was killed (interval left at -1) restores the template's 1s", async () => {
      const prefix = freshPrefix("bulk-left");
      const search = track(await createSearchStore({ url, indexPrefix: prefix }));
      const alias = search.info.alias;
      await fetch(`${url}/${alias}/_settings`, {
        method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ index: { refresh_interval: "-1" } }),
      });
      assert.equal(await intervalOf(url, alias), "-1");
      const loader = await createSearchStore({ url, indexPrefix: prefix }); // closed here: not the suite's to drop
      await loader.indexMany([makeMemory({ content: "left over" })]);
      assert.equal((await loader.search({ query: "left over" })).length, 1);
      assert.equal(await intervalOf(url, alias), "-1");
      await loader.close();
      assert.equal(await intervalOf(url, alias), "1s", "restored by close()");
    });
  });
}
