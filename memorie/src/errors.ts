/**
 * Errors shaped like Memorie's (`code`, optional `cause`/`details`), with what the server said.
 *
 *   Error
 *   └── StoreError            base: code, status?, reason?, details?
 *       ├── SearchError       code SEARCH_ERROR        (createSearchStore)
 *       ├── VectorStoreError  code VECTOR_STORE_ERROR  (createVectorStore)
 *       ├── GraphStoreError   code GRAPH_STORE_ERROR   (createGraphStore)
 *       └── RestoreError      code RESTORE_ERROR       (createSnapshot, restoreTenant)
 *
 * Messages and details never carry credentials: URLs lose their user-info and every configured secret is
 * masked before an error is built (see `redact`). The client's own error object is not kept as `cause`,
 * because it holds the request's headers; `cause` is a plain summary (name, message, status).
 */

export interface StoreErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
  /** HTTP status the server answered with, when there was an answer. */
  status?: number;
  /** The server's own reason (error type and message), when there was an answer. */
  reason?: string;
}

export class StoreError extends Error {
  readonly code: string;
  readonly status?: number;
  readonly reason?: string;
  readonly details?: Record<string, unknown>;

  constructor(message: string, code: string, options: StoreErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = options.status;
    this.reason = options.reason;
    this.details = options.details;
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

export class SearchError extends StoreError {
  constructor(message: string, options?: StoreErrorOptions) {
    super(message, "SEARCH_ERROR", options);
  }
}

export class VectorStoreError extends StoreError {
  constructor(message: string, options?: StoreErrorOptions) {
    super(message, "VECTOR_STORE_ERROR", options);
  }
}

export class GraphStoreError extends StoreError {
  constructor(message: string, options?: StoreErrorOptions) {
    super(message, "GRAPH_STORE_ERROR", options);
  }
}

export class RestoreError extends StoreError {
  constructor(message: string, options?: StoreErrorOptions) {
    super(message, "RESTORE_ERROR", options);
  }
}

export type ErrorClass = new (message: string, options?: StoreErrorOptions) => StoreError;

/**
 * Replace URL user-info, the credentials of `Authorization`-style values (`Basic …`, `ApiKey …`, `Bearer …`, which
 * a server may echo in a 401 reason) and every given secret in `text` with `***`.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1***@");
  out = out.replace(/\b(Basic|ApiKey|Bearer)(\s+)[A-Za-z0-9+/=._~-]{4,}/gi, "$1$2***");
  for (const secret of secrets) {
    if (secret.length > 0) out = out.split(secret).join("***");
  }
  return out;
}

/** The server's reason from an error body: `type: reason` of the root cause, or a short JSON excerpt. */
export function serverReason(body: unknown): string | undefined {
  if (body === undefined || body === null || body === "") return undefined;
  if (typeof body === "string") return body.slice(0, 500);
  const b = body as { error?: unknown; result?: unknown };
  const err = b.error;
  if (typeof err === "string") return err.slice(0, 500);
  if (err && typeof err === "object") {
    const e = err as { type?: string; reason?: string; root_cause?: { type?: string; reason?: string }[] };
    const root = e.root_cause?.[0];
    const type = e.type ?? root?.type;
    const reason = e.reason ?? root?.reason;
    let text = [type, reason].filter(Boolean).join(": ");
    const cause = (err as { caused_by?: { type?: string; reason?: string } }).caused_by;
    if (cause?.reason) text += ` (caused by ${cause.type}: ${cause.reason})`;
    return text.slice(0, 1000);
  }
  return JSON.stringify(body).slice(0, 500);
}
