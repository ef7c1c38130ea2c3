/**
 * Spans of the Memorie stores through `@opentelemetry/api`, with the conventions the Python package follows
 * (docs/operations.md):
 * - one span per memory operation (OpenTelemetry's GenAI memory conventions), named by `gen_ai.operation.name`
 *   (`search_memory`, `update_memory`, `delete_memory`, `delete_memory_store`), with `gen_ai.provider.name`
 *   `reme-es` and `gen_ai.memory.store.id` = `<indexPrefix>/<tenant>` (the tenant the call names, else the prefix
 *   alone); the query text (`gen_ai.memory.query.text`) only with `REME_ES_TRACE_QUERY_TEXT=1`;
 * - under it, one CLIENT span per try of an engine request (the database conventions): `<db.operation.name>
 *   <db.collection.name>`, with `db.system.name`, `server.address`/`server.port`, and on a failed try
 *   `db.response.status_code` and `error.type`.
 * With no tracer provider registered, the API's spans are non-recording and nothing is kept. Spans nest through the
 * context manager the application registers (Node: AsyncLocalStorage, as the SDK's NodeSDK does). The clients make
 * no spans of their own here: opensearch-js has none, and @elastic/transport's only wraps its named API calls, not
 * the `transport.request` the stores send through.
 */
import { context, createContextKey, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";

const tracer = trace.getTracer("reme-es-memorie");
const IN_OPERATION = createContextKey("reme-es memory operation");
const QUERY_TEXT_ENV = "REME_ES_TRACE_QUERY_TEXT";
const BY_METHOD: Record<string, string> = { GET: "indices.get", HEAD: "indices.exists", PUT: "indices.create", DELETE: "indices.delete" };
const DOC: Record<string, string> = { GET: "get", HEAD: "exists", PUT: "index", POST: "index", DELETE: "delete" };
const PLAIN = new Set(["search", "msearch", "bulk", "count", "mget", "update", "delete_by_query", "update_by_query"]);

export type MemoryOperation = "search_memory" | "update_memory" | "delete_memory" | "create_memory_store" | "delete_memory_store";

/** `db.operation.name` and `db.collection.name` (or undefined) of a request, from its method and REST path. */
export function operationOf(method: string, path: string): [string, string | undefined] {
  const parts = (path.split("?")[0] ?? "").split("/").filter((p) => p !== "").map((p) => decodeURIComponent(p));
  const at = parts.findIndex((p) => p.startsWith("_"));
  const collection = parts.length > 0 && at !== 0 ? parts[0] : undefined;
  if (at < 0) return [BY_METHOD[method] ?? method.toLowerCase(), collection];
  const endpoint = (parts[at] ?? "_").slice(1);
  if (endpoint === "doc") return [DOC[method] ?? "index", collection];
  if (endpoint === "create") return ["create", collection];
  if (PLAIN.has(endpoint)) return [endpoint, collection];
  if (collection !== undefined) return [`indices.${endpoint}`, collection];
  const tail = parts.slice(at + 1).filter((p) => !p.startsWith("_"))[0];
  return [["cluster", "cat", "nodes"].includes(endpoint) && tail ? `${endpoint}.${tail}` : endpoint, undefined];
}

/** One try of an engine request: its span, ended with the answer's status or the failure. */
export function engineRequest(
  engine: string,
  method: string,
  path: string,
  urls: readonly string[],
): { end(status?: number, failure?: string, body?: unknown): void } {
  const [operation, collection] = operationOf(method, path);
  const attributes: Record<string, string | number> = { "db.system.name": engine, "db.operation.name": operation };
  if (collection !== undefined) attributes["db.collection.name"] = collection;
  if (urls.length > 0) {
    const url = new URL(urls[0] as string);
    attributes["server.address"] = url.hostname;
    attributes["server.port"] = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  }
  const span = tracer.startSpan(collection ? `${operation} ${collection}` : operation, { kind: SpanKind.CLIENT, attributes });
  return {
    end(status?: number, failure?: string, body?: unknown) {
      if (body !== undefined) notePartial(collection, body);
      if (status !== undefined && status >= 400) {
        span.setAttribute("db.response.status_code", String(status));
        span.setAttribute("error.type", String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else if (failure !== undefined) {
        span.setAttribute("error.type", failure);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

/** A search some shards did not answer: a `partial_answer` event on the memory operation's span (an `_msearch`'s
 * answers each count). */
function notePartial(collection: string | undefined, body: unknown): void {
  const answers = (body as { responses?: unknown[] })?.responses ?? [body];
  for (const answer of answers) {
    const shards = (answer as { _shards?: { total?: number; successful?: number } })?._shards;
    if (!shards || typeof shards.total !== "number" || typeof shards.successful !== "number") continue;
    if (shards.successful >= shards.total) continue;
    trace.getActiveSpan()?.addEvent("partial_answer", {
      ...(collection !== undefined ? { "db.collection.name": collection } : {}),
      "reme_es.shards.total": shards.total,
      "reme_es.shards.failed": shards.total - shards.successful,
    });
  }
}

/** Run `fn` as one memory operation's span (inside another operation: no span of its own). */
export async function memoryOperation<T>(
  operation: MemoryOperation,
  storeId: string,
  fn: (span: Span | undefined) => Promise<T>,
  query?: string,
): Promise<T> {
  if (context.active().getValue(IN_OPERATION)) return fn(undefined);
  const attributes: Record<string, string> = {
    "gen_ai.operation.name": operation,
    "gen_ai.provider.name": "reme-es",
    "gen_ai.memory.store.id": storeId,
  };
  if (query !== undefined && ["1", "true", "yes"].includes((process.env[QUERY_TEXT_ENV] ?? "").toLowerCase())) {
    attributes["gen_ai.memory.query.text"] = query;
  }
  return tracer.startActiveSpan(operation, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await context.with(context.active().setValue(IN_OPERATION, true), () => fn(span));
    } catch (exc) {
      span.setAttribute("error.type", (exc as { name?: string })?.name ?? "Error");
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw exc;
    } finally {
      span.end();
    }
  });
}

/** Which memory operation each traced method of a store is, and the query text of its arguments (if any). */
export type Operations = Record<string, { op: MemoryOperation; query?: (args: unknown[]) => string | undefined }>;

function tenantOf(args: unknown[]): string | undefined {
  const first = args[0] as { tenantId?: unknown; tenant?: unknown } | undefined;
  const tenant = typeof first === "object" && first !== null ? (first.tenantId ?? first.tenant) : undefined;
  return typeof tenant === "string" && tenant !== "" ? tenant : undefined;
}

/** `store` with each method of `operations` run as a memory operation of store `<prefix>/<tenant>`. */
export function traced<T extends object>(store: T, prefix: string, operations: Operations): T {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      const spec = typeof prop === "string" ? operations[prop] : undefined;
      if (spec === undefined || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const tenant = tenantOf(args);
        const id = tenant === undefined ? prefix : `${prefix}/${tenant}`;
        return memoryOperation(spec.op, id, () => value.apply(target, args), spec.query?.(args));
      };
    },
  });
}
