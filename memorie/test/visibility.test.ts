// The deferred-refresh scheduler without a server: a scripted refresh function and a controllable clock stand in for
// the node (the real-node behaviour, add then search at once on both engines, is in engine-calls.test.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { DeferredRefresh, MAX_DELAY_FACTOR } from "../src/visibility.js";

/** A refresh that resolves when told to, recording the index of every call. */
function gatedRefresh() {
  const calls: string[] = [];
  const gates: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const refresh = (index: string) =>
    new Promise<void>((resolve, reject) => {
      calls.push(index);
      gates.push({ resolve, reject });
    });
  return { calls, gates, refresh };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("deferred refresh", () => {
  it("no write, no refresh; writes are refreshed once, before the next read, however many they were", async () => {
    const calls: string[] = [];
    const v = new DeferredRefresh(async (i) => void calls.push(i), 60_000);
    await v.beforeRead("a");
    assert.deepEqual(calls, []);
    for (let i = 0; i < 5; i++) v.written("a");
    assert.equal(v.pending("a"), true);
    await v.beforeRead("a");
    await v.beforeRead("a");
    await v.beforeRead("b");
    assert.deepEqual(calls, ["a"]);
    assert.equal(v.pending("a"), false);
    await v.flush();
  });

  it("a bulk call's writes (background false) are refreshed before the next read, never in the background", async () => {
    const calls: string[] = [];
    const v = new DeferredRefresh(async (i) => void calls.push(i), 10);
    v.written("a", false);
    assert.equal(v.pending("a"), true);
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(calls, [], "no background refresh between the parts of a load");
    await v.beforeRead("a");
    assert.deepEqual(calls, ["a"]);
    await v.flush();
  });

  it("concurrent readers share one refresh; a write finishing during it makes the next read refresh again", async () => {
    const g = gatedRefresh();
    const v = new DeferredRefresh(g.refresh, 60_000);
    v.written("a");
    let done = 0;
    const r1 = v.beforeRead("a").then(() => done++);
    const r2 = v.beforeRead("a").then(() => done++);
    await tick();
    assert.deepEqual(g.calls, ["a"]);
    assert.equal(done, 0, "readers wait for the refresh that covers their writes");
    v.written("a"); // acknowledged while the refresh runs: it may not be in it
    g.gates[0]!.resolve();
    await Promise.all([r1, r2]);
    assert.equal(done, 2);
    const r3 = v.beforeRead("a");
    await tick();
    assert.deepEqual(g.calls, ["a", "a"]);
    g.gates[1]!.resolve();
    await r3;
    await v.flush();
  });

  it("a failed refresh leaves the writes pending, so the next read tries again", async () => {
    const g = gatedRefresh();
    const v = new DeferredRefresh(g.refresh, 60_000);
    v.written("a");
    const r1 = v.beforeRead("a");
    await tick();
    g.gates[0]!.reject(new Error("node busy"));
    await assert.rejects(r1, /node busy/);
    assert.equal(v.pending("a"), true);
    const r2 = v.beforeRead("a");
    await tick();
    g.gates[1]!.resolve();
    await r2;
    assert.deepEqual(g.calls, ["a", "a"]);
    assert.equal(v.pending("a"), false);
  });

  it("refreshes in the background after a quiet moment, and at least every 10x that during a stream", async () => {
    const calls: number[] = [];
    const start = performance.now();
    const v = new DeferredRefresh(async () => void calls.push(performance.now() - start), 20);
    v.written("a");
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(calls.length, 1);
    assert.ok(calls[0]! >= 19, String(calls));
    assert.equal(v.pending("a"), false);
    // a write every 5 ms for ~400 ms: never quiet for 20 ms, so without the 10x cap (200 ms) nothing would refresh
    calls.length = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 400) {
      v.written("a");
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(calls.length >= 1, "no refresh during a steady 400 ms stream of writes");
    assert.ok(MAX_DELAY_FACTOR * 20 < 400);
    await v.flush();
  });

  it("flush refreshes what is pending and stops the timer", async () => {
    const calls: string[] = [];
    const v = new DeferredRefresh(async (i) => void calls.push(i), 50);
    v.written("a");
    v.written("b");
    await v.flush();
    assert.deepEqual(calls, ["a", "b"]);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(calls, ["a", "b"], "no background refresh after flush");
  });
});
