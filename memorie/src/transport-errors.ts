/**
 * The errors a connection (transport.ts) throws when a call fails as a whole, worded to say what happened and what to
 * do: the node unreachable, no success in time, a missing index, another cluster behind the URL, failed bulk items.
 */
import { serverReason, type StoreError } from "./errors.js";
import type { BulkFailure, RequestParams, Response } from "./retry.js";

/** What the errors are told of the connection: its error builder (redacting), its nodes and its call deadline. */
export interface Teller {
  error(message: string, extra?: { status?: number; reason?: string; details?: Record<string, unknown> }): StoreError;
  readonly urls: readonly string[];
  readonly callTimeoutMs: number;
}

/**
 * Connections failed on every try: how many tries in how long (a closed port fails in milliseconds, so the tries
 * run out long before `callTimeoutMs`), and whether the call stopped because the next backoff would pass it.
 */
export function unreachableError(t: Teller, params: RequestParams, attempts: number, last: string, took: number, cut: boolean): StoreError {
  const stop = cut
    ? `; the next retry's backoff would pass callTimeoutMs (${t.callTimeoutMs} ms), so it stopped there`
    : "";
  const tries = `after ${attempts} attempt(s) in ${took < 1000 ? `${Math.round(took)} ms` : `${(took / 1000).toFixed(1)} s`}`;
  return t.error(`${params.what} failed: the node could not be reached ${tries} (last: ${last})${stop}; is it running?`, {
    reason: last,
    details: { method: params.method, path: params.path, attempts },
  });
}

/** No success within `ms` (the call's deadline), after `attempts` tries; `last`: what the last one got. */
export function outOfTimeError(
  t: Teller,
  params: RequestParams,
  attempts: number,
  last: string,
  status: number | undefined,
  ms: number,
): StoreError {
  return t.error(
    `${params.what} failed: no success within ${ms} ms (callTimeoutMs) after ${attempts} ` +
      `attempt(s)${last ? `; last: ${last}` : ""}. Is ${t.urls.join(", ") || "the node"} an OpenSearch or ` +
      "Elasticsearch node that answers? Raise callTimeoutMs/requestTimeoutMs for a slow node",
    { status, reason: last || undefined, details: { method: params.method, path: params.path, attempts } },
  );
}

/** The index a request named does not exist (a write to it was refused: no index was created). */
export function missingIndexError(t: Teller, params: RequestParams, index: string, response: Response): StoreError {
  const read = params.method === "GET" || params.path.endsWith("/_search") || params.path.endsWith("/_refresh");
  const refused = read ? "" : "; the write was refused, no index created";
  return t.error(
    `${params.what} failed: index ${index} does not exist on ${t.urls.join(", ") || "the node"} (deleted by ` +
      `drop() or by another process?)${refused}. Create the store again (createSearchStore, createVectorStore or ` +
      "createGraphStore with the same indexPrefix) to get an empty index, or restore the index",
    { status: 404, reason: serverReason(response.body), details: { method: params.method, path: params.path, index } },
  );
}

/** The URL now reaches another cluster (`uuid`), or a server that is no cluster node, not the one opened. */
export function otherClusterError(t: Teller, opened: string | undefined, uuid: string | undefined, status: number): StoreError {
  const now =
    uuid !== undefined ? `cluster ${uuid}`
    : status < 400 ? `a server that tells no cluster UUID (HTTP ${status})`
    : `a server that is not a node of any cluster (HTTP ${status})`;
  return t.error(
    `${t.urls.join(", ")} now reaches ${now}, not cluster ${opened} where this store was opened ` +
      "(was its node restarted on another port, and another node took this one?); nothing was sent. Point `url` " +
      "at the node that holds this store's indices and create the store again",
    { details: { openedClusterUuid: opened, answeringClusterUuid: uuid ?? null } },
  );
}

/** One error listing every failed bulk item (`failures`: not empty). */
export function bulkFailuresError(t: Teller, what: string, failures: BulkFailure[], total: number): StoreError {
  const first = failures[0] as BulkFailure;
  return t.error(
    `${what}: ${failures.length} of ${total} items failed (first: ${first.id}: HTTP ${first.status} ${first.reason}); ` +
      "the other items are stored",
    { status: first.status, reason: first.reason, details: { failures } },
  );
}
