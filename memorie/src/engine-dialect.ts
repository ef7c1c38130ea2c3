/**
 * The engine dialects: one object per engine, found by the engine's name (`dialectOf`, as the Python side finds its
 * dialect module by entry point: reme_es/adapters/engines.py). What differs between OpenSearch and Elasticsearch is
 * decided here, and nowhere above: which official client sends, which versions are supported, how a search asks for
 * its hits' vectors, and the exact scoring script of the k-NN width calibration. The builders are pure; the stores
 * and `knn-calibration.ts` / `restore.ts` hold a dialect and speak in its methods (tests/unit/test_dialect_confined.py
 * keeps engine names out of them). Bodies both languages send are pinned by `tests/unit/golden/` (memorie/test/
 * golden-bodies.test.ts; Python: tests/unit/test_knn_calibration.py).
 */
import type { Response, SendParams } from "./retry.js";
import { SETTINGS } from "./settings.js";
import type { Clause, Engine } from "./types.js";

export type { Clause } from "./types.js";

/** How a sender reaches the nodes: credentials, TLS and the default timeout of one try. */
export interface SenderOptions {
  auth?: { username: string; password: string } | { apiKey: string } | { bearer: string };
  tls?: { ca?: string | Buffer; rejectUnauthorized?: boolean };
  requestTimeoutMs: number;
}

/** An engine's official client as the connection drives it: one try of one request, and how to close it. */
export interface ClientSender {
  send: (p: SendParams) => Promise<Response>;
  close: () => Promise<void>;
}


/** The `_source` of a search whose hits carry their vectors. */
export type VectorSource = boolean | string[] | { includes?: string[]; exclude_vectors: false };

const ALL_ERROR_STATUSES = Array.from({ length: 200 }, (_, i) => 400 + i);
const BODIES = SETTINGS.knn_calibration.bodies;

/** The request of one try as both official clients take it (`_bulk` and `_msearch` bodies are NDJSON text). */
function clientRequest(p: SendParams) {
  return p.path === "/_bulk" || p.path === "/_msearch"
    ? { method: p.method, path: p.path, bulkBody: p.body as string, querystring: p.query }
    : { method: p.method, path: p.path, body: p.body as Record<string, unknown>, querystring: p.query };
}

/** The entries of `filter` (none: all) that have a vector. */
function withVector(filter: Clause | undefined): Clause {
  return { bool: { filter: [...(filter ? [filter] : []), { exists: { field: "embedding" } }] } };
}

/** What one engine does its own way; the shared builders are the base class's. */
export abstract class EngineDialect {
  abstract readonly engine: Engine;
  /** The engine's name in messages, and the oldest major version this package supports on it. */
  abstract readonly product: string;
  abstract readonly oldestMajor: number;

  /** The engine's official client as a sender (its own retries off: the connection retries). */
  abstract openSender(urls: string[], o: SenderOptions): Promise<ClientSender>;

  /** The `_source` of a search whose hits carry their vectors and nothing else (calibration's sample). */
  abstract vectorsSource(): VectorSource;

  /** The scoring script of an exact cosine search of `vector` (`script_score`). */
  abstract exactScript(vector: number[]): Clause;

  /** The `_source` of a copy's scan on a node of `version` (an engine may keep vectors out of it unless asked). */
  sourceWithVectors(_version: string): VectorSource {
    return true;
  }

  /** Why a node of `version` is not supported (undefined: it is). */
  unsupported(version: string): string | undefined {
    if (Number.parseInt(version, 10) >= this.oldestMajor) return undefined;
    const next = `${this.oldestMajor}.x or ${this.oldestMajor + 1}.x`;
    return `${this.product} ${version} is not supported: reme-es-memorie needs ${this.product} ${next}`;
  }

  /** A random sample (by `seed`) of `size` entries of `filter` with a vector, carrying their vectors. */
  sampleBody(filter: Clause | undefined, size: number, seed: number): Clause {
    const randomScore = { seed, field: BODIES.random_field };
    return {
      size,
      query: { function_score: { query: withVector(filter), random_score: randomScore } },
      _source: this.vectorsSource(),
      track_total_hits: false,
    };
  }

  /** An exact (brute-force) cosine search over the entries of `filter` with a vector: the `size` nearest. */
  exactBody(vector: number[], filter: Clause | undefined, size: number): Clause {
    return { size, query: { script_score: { query: withVector(filter), script: this.exactScript(vector) } }, _source: false };
  }
}

/** Search `size` hits of `body`, answering their ids and scores only. */
export function idsAndScores(body: Clause, size: number): Clause {
  return { ...body, size, _source: false };
}

/** The same search with `source` as its `_source`. */
export function withSource(body: Clause, source: unknown): Clause {
  return { ...body, _source: source };
}

/** A look-up of the documents among `ids` that `query` matches (ids only). */
export function idsAmongBody(ids: string[], query: Clause): Clause {
  return { query: { bool: { filter: [{ ids: { values: ids } }, query] } }, size: ids.length, _source: false };
}

/** A look-up of the first document among `ids` that `query` does not match (ids only). */
export function idsOutsideBody(ids: string[], query: Clause): Clause {
  return { query: { bool: { filter: [{ ids: { values: ids } }], must_not: [query] } }, size: 1, _source: false };
}

class OpenSearchDialect extends EngineDialect {
  readonly engine = "opensearch" as const;
  readonly product = "OpenSearch";
  readonly oldestMajor = 2;

  /** The OpenSearch client does no product check, so it can also ask any node what it is. */
  async openSender(urls: string[], o: SenderOptions): Promise<ClientSender> {
    const headers: Record<string, string> = {};
    if (o.auth && "apiKey" in o.auth) headers.authorization = `ApiKey ${o.auth.apiKey}`;
    if (o.auth && "bearer" in o.auth) headers.authorization = `Bearer ${o.auth.bearer}`;
    const basic = o.auth && "username" in o.auth ? { username: o.auth.username, password: o.auth.password } : undefined;
    const ssl = o.tls ? { ca: o.tls.ca, rejectUnauthorized: o.tls.rejectUnauthorized ?? true } : undefined;
    const os = await import("@opensearch-project/opensearch");
    const client = new os.Client({ nodes: urls, auth: basic, ssl, headers, maxRetries: 0, requestTimeout: o.requestTimeoutMs });
    const send = async (p: SendParams): Promise<Response> => {
      const options = { ignore: ALL_ERROR_STATUSES, maxRetries: 0, requestTimeout: p.timeoutMs };
      const r = await client.transport.request(clientRequest(p), options);
      return { status: r.statusCode ?? 0, body: r.body, headers: (r.headers ?? {}) as Record<string, unknown> };
    };
    return { send, close: () => client.close() };
  }

  vectorsSource(): VectorSource {
    return ["embedding"];
  }

  /** The k-NN plugin's scoring script (docs: "Exact k-NN with scoring script"). */
  exactScript(vector: number[]): Clause {
    return { source: "knn_score", lang: "knn", params: { field: "embedding", query_value: vector, space_type: BODIES.space_type } };
  }
}

class ElasticsearchDialect extends EngineDialect {
  readonly engine = "elasticsearch" as const;
  readonly product = "Elasticsearch";
  readonly oldestMajor = 8;

  async openSender(urls: string[], o: SenderOptions): Promise<ClientSender> {
    const tls = o.tls ? { ca: o.tls.ca, rejectUnauthorized: o.tls.rejectUnauthorized ?? true } : undefined;
    const es = await import("@elastic/elasticsearch");
    const auth = o.auth as ConstructorParameters<typeof es.Client>[0]["auth"];
    const client = new es.Client({ nodes: urls, auth, tls, maxRetries: 0, requestTimeout: o.requestTimeoutMs });
    const send = async (p: SendParams): Promise<Response> => {
      const options = { ignore: ALL_ERROR_STATUSES, maxRetries: 0, meta: true, requestTimeout: p.timeoutMs } as const;
      const r = await client.transport.request(clientRequest(p), options);
      return { status: r.statusCode ?? 0, body: r.body };
    };
    return { send, close: () => client.close() };
  }

  vectorsSource(): VectorSource {
    return { includes: ["embedding"], exclude_vectors: false };
  }

  /** 9.2+ keeps vectors out of the stored `_source` unless a search asks for them. */
  override sourceWithVectors(version: string): VectorSource {
    const [major, minor] = version.split(".").map(Number) as [number, number];
    return major > 9 || (major === 9 && minor >= 2) ? { exclude_vectors: false } : true;
  }

  /** Painless (docs: "Exact kNN"); a node without it answers an error naming the script. */
  exactScript(vector: number[]): Clause {
    return { source: BODIES.painless, params: { query_vector: vector } };
  }
}

const DIALECTS: Record<Engine, EngineDialect> = {
  opensearch: new OpenSearchDialect(),
  elasticsearch: new ElasticsearchDialect(),
};

/** The engines this package speaks. */
export const ENGINES = Object.keys(DIALECTS) as Engine[];

/** The dialect of `engine`. */
export function dialectOf(engine: Engine): EngineDialect {
  return DIALECTS[engine];
}
