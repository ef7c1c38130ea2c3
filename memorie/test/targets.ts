/**
 * The nodes the tests run against, from the environment:
 *   REME_ES_MEMORIE_OPENSEARCH_URL      e.g. http://127.0.0.1:9250 (OpenSearch 2.19 with k-NN)
 *   REME_ES_MEMORIE_ELASTICSEARCH_URL   e.g. http://127.0.0.1:9260 (Elasticsearch 9)
 * At least one must be set: a run that tests no node fails rather than passing empty.
 */
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
      "(e.g. http://127.0.0.1:<port> of a node from `reme-es server start --flavour opensearch-2.19`)",
  );
}

let counter = 0;
/** An index prefix no other test (or run) uses. */
export function freshPrefix(label: string): string {
  return `memorie-test-${process.pid}-${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}
