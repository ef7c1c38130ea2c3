/**
 * A small HTTP server that plays a script: each request gets the next scripted answer, and what was asked is kept.
 * The answers are those of the golden behaviour cases (`tests/golden/behaviour_cases.json`), which the Python suite
 * plays with its own server (`tests/unit/scripted_server.py`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

export type Answer = {
  status?: number;
  retry_after?: number;
  drop?: boolean;
  items?: number[];
  /** The error type of a status answer's body, or of every failed item (`scripted_exception` when absent). */
  type?: string;
  /** Per item: the error type of that failed item (null: `type`). */
  types?: (string | null)[];
  uuid?: string;
  delay_s?: number;
  /** [total, successful] shards of a search answer (test/tracing.test.ts: a partial answer). */
  partial?: [number, number];
};

const SEARCH_ANSWER = {
  took: 1,
  timed_out: false,
  _shards: { total: 1, successful: 1, skipped: 0, failed: 0 },
  hits: { total: { value: 0, relation: "eq" }, max_score: null, hits: [] },
};

/** `check` for the cluster check's request, `call` for any other. */
export function kindOf(path: string): "check" | "call" {
  return path.startsWith("/_cluster/state") ? "check" : "call";
}

/** [op, id] of every action of an NDJSON bulk body. */
function bulkIds(body: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of body.split("\n")) {
    if (!line.trim()) continue;
    const doc = JSON.parse(line);
    const op = Object.keys(doc)[0] as string;
    if (["index", "create", "delete", "update"].includes(op) && doc[op]?._id !== undefined) out.push([op, doc[op]._id]);
  }
  return out;
}

/** The status and JSON body of one scripted answer to a request with `body`. */
function render(answer: Answer, body: string): [number, unknown] {
  if (answer.uuid !== undefined) return [200, { metadata: { cluster_uuid: answer.uuid } }];
  if (answer.items !== undefined) {
    const actions = bulkIds(body);
    if (actions.length !== answer.items.length) throw new Error(`${actions.length} actions for ${answer.items.length} scripted items`);
    const items = answer.items.map((status, i) => {
      const [op, id] = actions[i] as [string, string];
      const type = answer.types?.[i] ?? answer.type ?? "scripted_exception";
      const error = status >= 300 ? { type, reason: `scripted ${status} for ${id}` } : undefined;
      return { [op]: { _index: "golden-1", _id: id, status, ...(error ? { error } : {}) } };
    });
    return [200, { took: 1, errors: answer.items.some((s) => s >= 300), items }];
  }
  const status = answer.status ?? 599;
  if (status < 300 && answer.partial !== undefined) {
    const [total, successful] = answer.partial;
    return [status, { ...SEARCH_ANSWER, _shards: { total, successful, skipped: 0, failed: total - successful } }];
  }
  if (status < 300) return [status, SEARCH_ANSWER];
  const error = { type: answer.type ?? "scripted_exception", reason: `scripted ${status}` };
  return [status, { error: { ...error, root_cause: [error] }, status }];
}

export class ScriptedServer {
  answers: Answer[] = [];
  readonly asked: { kind: "check" | "call"; method: string; path: string }[] = [];
  private readonly sockets = new Set<Socket>();
  /** Answers scheduled late (`delay_s`), cancelled at close. */
  private readonly late = new Set<ReturnType<typeof setTimeout>>();

  private constructor(
    private readonly server: Server,
    private readonly elasticsearch: boolean,
  ) {}

  /** Listen on a free local port; `elasticsearch`: every answer says it comes from Elasticsearch. */
  static async start(elasticsearch: boolean): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined;
    const server = createServer((req, res) => self?.handle(req, res));
    self = new ScriptedServer(server, elasticsearch);
    server.on("connection", (s: Socket) => {
      self?.sockets.add(s);
      s.on("close", () => self?.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return self;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    for (const t of this.late) clearTimeout(t);
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] as string;
      this.asked.push({ kind: kindOf(path), method: req.method ?? "", path });
      const answer = this.answers.shift() ?? { status: 599 };
      if (answer.drop) {
        req.socket.destroy();
        return;
      }
      const [status, payload] = render(answer, Buffer.concat(chunks).toString("utf8"));
      const data = JSON.stringify(payload);
      const headers: Record<string, string> = { "content-type": "application/json", "content-length": String(Buffer.byteLength(data)) };
      if (this.elasticsearch) headers["x-elastic-product"] = "Elasticsearch";
      if (answer.retry_after !== undefined) headers["retry-after"] = String(answer.retry_after);
      const reply = () => {
        if (!res.destroyed) res.writeHead(status, headers).end(data); // late: the client may have given up
      };
      if (answer.delay_s === undefined) return reply();
      const timer = setTimeout(() => {
        this.late.delete(timer);
        reply();
      }, answer.delay_s * 1000);
      this.late.add(timer);
    });
  }
}
