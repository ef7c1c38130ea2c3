// Spans of the Memorie stores (src/tracing.ts) with the SDK's in-memory exporter and an AsyncLocalStorage context
// manager (what NodeSDK registers): a search, a write and a failed request on the nodes of targets.ts, and a retried
// request on the scripted server (one span per try). The conventions are the Python package's (docs/operations.md).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { openSender } from "../src/connection.js";
import { SearchError } from "../src/errors.js";
import { createSearchStore } from "../src/index.js";
import { RETRY } from "../src/settings.js";
import { memoryOperation, operationOf } from "../src/tracing.js";
import { Connection } from "../src/transport.js";
import type { Memory } from "../src/types.js";
import { ScriptedServer } from "./scripted-server.js";
import { freshPrefix, targets } from "./targets.js";

const exporter = new InMemorySpanExporter();

before(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});

after(() => {
  trace.disable();
  context.disable();
});

/** (depth, name) of the spans, parents first, siblings by start time. */
function tree(spans: ReadableSpan[]): [number, string][] {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const byParent = new Map<string | undefined, ReadableSpan[]>();
  const start = (s: ReadableSpan) => s.startTime[0] * 1e9 + s.startTime[1];
  for (const s of [...spans].sort((a, b) => start(a) - start(b))) {
    const parent = s.parentSpanContext?.spanId;
    const key = parent !== undefined && ids.has(parent) ? parent : undefined;
    byParent.set(key, [...(byParent.get(key) ?? []), s]);
  }
  const out: [number, string][] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of byParent.get(parent) ?? []) {
      out.push([depth, s.name]);
      walk(s.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return out;
}

function memory(id: string, content: string): Memory {
  const now = new Date("2026-05-01T00:00:00Z");
  return {
    id, tenantId: "acme", namespace: "default", subjectId: "u1", type: "fact", content, state: "active", importance: 0.5,
    confidence: 0.9, metadata: {}, createdAt: now, updatedAt: now, accessCount: 0, version: 1,
  } as Memory;
}

describe("operationOf: the operation and the index of a REST path", () => {
  it("names search, bulk, documents, index admin and cluster calls", () => {
    assert.deepEqual(operationOf("POST", "/p-memorie-memories/_search"), ["search", "p-memorie-memories"]);
    assert.deepEqual(operationOf("POST", "/_bulk"), ["bulk", undefined]);
    assert.deepEqual(operationOf("PUT", "/p-memorie-memories/_doc/a%2Fb"), ["index", "p-memorie-memories"]);
    assert.deepEqual(operationOf("POST", "/p-memorie-memories/_refresh"), ["indices.refresh", "p-memorie-memories"]);
    assert.deepEqual(operationOf("GET", "/_cluster/health"), ["cluster.health", undefined]);
    assert.deepEqual(operationOf("PUT", "/p-memorie-memories-v1"), ["indices.create", "p-memorie-memories-v1"]);
  });
});

for (const t of targets) {
  describe(`spans of a Memorie search store [${t.engine}]`, () => {
    it("a write is one update_memory and a search one search_memory over their engine requests", async () => {
      const prefix = freshPrefix("trace");
      const store = await createSearchStore({ url: t.url, indexPrefix: prefix, refresh: "true" } as any);
      const alias = `${prefix}-memorie-memories`;
      try {
        exporter.reset();
        await store.index(memory("m1", "the agent indexes its memory"));
        const written = tree(exporter.getFinishedSpans());
        assert.deepEqual(written[0], [0, "update_memory"]);
        assert.ok(written.slice(1).every(([depth]) => depth === 1), JSON.stringify(written));
        const top = exporter.getFinishedSpans().find((s) => s.name === "update_memory") as ReadableSpan;
        assert.deepEqual(top.attributes, {
          "gen_ai.operation.name": "update_memory", "gen_ai.provider.name": "reme-es", "gen_ai.memory.store.id": `${prefix}/acme`,
        });

        exporter.reset();
        const found = await store.search({ tenantId: "acme", query: "memory" });
        assert.deepEqual(found.map((r) => r.memory.id), ["m1"]);
        const spans = exporter.getFinishedSpans();
        assert.deepEqual(tree(spans), [[0, "search_memory"], [1, `search ${alias}`]]);
        const request = spans.find((s) => s.name === `search ${alias}`) as ReadableSpan;
        const url = new URL(t.url);
        assert.deepEqual(request.attributes, {
          "db.system.name": t.engine, "db.operation.name": "search", "db.collection.name": alias,
          "server.address": url.hostname, "server.port": Number(url.port),
        });
        const operation = spans.find((s) => s.name === "search_memory") as ReadableSpan;
        assert.equal(operation.attributes["gen_ai.memory.query.text"], undefined); // no opt-in
      } finally {
        await store.drop();
        await store.close();
      }
    });

    it("a failed request marks its span and the operation's", async () => {
      const prefix = freshPrefix("trace-fail");
      const store = await createSearchStore({ url: t.url, indexPrefix: prefix, refresh: "true" } as any);
      try {
        await store.drop();
        exporter.reset();
        await assert.rejects(store.search({ tenantId: "acme", query: "memory" }), SearchError);
        const spans = exporter.getFinishedSpans();
        const failed = spans.filter((s) => s.attributes["db.response.status_code"] === "404");
        assert.ok(failed.length >= 1, JSON.stringify(tree(spans)));
        assert.equal(failed[0]?.attributes["error.type"], "404");
        const operation = spans.find((s) => s.name === "search_memory") as ReadableSpan;
        assert.equal(operation.attributes["error.type"], "SearchError");
        assert.equal(failed[0]?.parentSpanContext?.spanId, operation.spanContext().spanId);
      } finally {
        await store.close();
      }
    });
  });
}

describe("a partial answer is an event on the operation's span", () => {
  it("2 of 3 shards answered: partial_answer with the shards failed", async () => {
    const server = await ScriptedServer.start(false);
    const { send, close } = await openSender("opensearch", [server.url], { requestTimeoutMs: RETRY.request.requestTimeoutMs });
    try {
      const conn = new Connection({
        engine: "opensearch", version: "test", refresh: "false", send, errorClass: SearchError, secrets: [], urls: [server.url],
        retry: RETRY.request, limits: { requestTimeoutMs: 30000, callTimeoutMs: 60000 }, sleep: async () => {},
      } as any);
      server.answers = [{ status: 200, partial: [3, 2] }];
      exporter.reset();
      await memoryOperation("search_memory", "golden/acme", () =>
        conn.request({ method: "POST", path: "/golden/_search", body: {}, what: "search" }),
      );
      const operation = exporter.getFinishedSpans().find((s) => s.name === "search_memory") as ReadableSpan;
      assert.deepEqual(
        operation.events.map((e) => [e.name, e.attributes]),
        [["partial_answer", { "db.collection.name": "golden", "reme_es.shards.total": 3, "reme_es.shards.failed": 1 }]],
      );
    } finally {
      await close();
      await server.close();
    }
  });
});

describe("a retried request is one span per try", () => {
  it("503 then 200: two spans under the operation, the first failed", async () => {
    const server = await ScriptedServer.start(false);
    const { send, close } = await openSender("opensearch", [server.url], { requestTimeoutMs: RETRY.request.requestTimeoutMs });
    try {
      const conn = new Connection({
        engine: "opensearch", version: "test", refresh: "false", send, errorClass: SearchError, secrets: [], urls: [server.url],
        retry: RETRY.request, limits: { requestTimeoutMs: 30000, callTimeoutMs: 60000 }, sleep: async () => {},
      } as any);
      server.answers = [{ status: 503 }, { status: 200 }];
      exporter.reset();
      await memoryOperation("search_memory", "golden/acme", () =>
        conn.request({ method: "POST", path: "/golden/_search", body: {}, what: "search" }),
      );
      const spans = exporter.getFinishedSpans();
      assert.deepEqual(tree(spans), [[0, "search_memory"], [1, "search golden"], [1, "search golden"]]);
      const [first, second] = spans.filter((s) => s.name === "search golden") as [ReadableSpan, ReadableSpan];
      assert.equal(first.attributes["db.response.status_code"], "503");
      assert.equal(second.attributes["error.type"], undefined);
    } finally {
      await close();
      await server.close();
    }
  });
});
