/**
 * The nodes the tests run against, from the environment:
 *   REME_ES_MEMORIE_OPENSEARCH_URL      e.g. http://127.0.0.1:9250 (OpenSearch 3 with k-NN, what `./run test` starts)
 *   REME_ES_MEMORIE_ELASTICSEARCH_URL   e.g. http://127.0.0.1:9260 (Elasticsearch 9)
 * At least one must be set: a run that tests no node fails rather than passing empty.
 */
import { after } from "node:test";

import type { Engine } from "../src/connection.js";

export interface Target {
  engine: Engine;
  url: string;
}

export const targets: Target[] = [
  { engine: "opensearch" as const, url: process.env.REME_ES_MEMORIE_OPENSEARCH_URL ?? "" },
  { engine: "elasticsearch" as const, url: process.env.REME_ES_MEMORIE_ELASTICSEARCH_URL ?? "" },
].filter((t) => t.url !== "");

if (targets.length === 0) {
  throw new Error(
    "no node to test against: set REME_ES_MEMORIE_OPENSEARCH_URL and/or REME_ES_MEMORIE_ELASTICSEARCH_URL " +
      "(e.g. http://127.0.0.1:<port> of a node from `reme-es server start --flavour opensearch-3`)",
  );
}

let counter = 0;
/** An index prefix no other test (or run) uses. */
export function freshPrefix(label: string): string {
  return `memorie-test-${process.pid}-${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** One JSON request straight to a node (no store in between): the status and the parsed body (null if none). */
export async function http(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

export interface Droppable {
  drop(): Promise<void>;
  close(): Promise<void>;
}

/** Called inside a `describe`: `track(store)` returns the store, dropped and closed (errors ignored) after the suite. */
export function dropAfterSuite(): <T extends Droppable>(store: T) => T {
  const open: Droppable[] = [];
  after(async () => {
    for (const s of open) {
      await s.drop().catch(() => {});
      await s.close().catch(() => {});
    }
  });
  return (store) => (open.push(store), store);
}
