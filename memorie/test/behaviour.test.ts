// The golden behaviour cases (tests/golden/behaviour_cases.json), replayed by the real connection code and both
// official clients in front of a scripted HTTP server; tests/unit/test_behaviour_cases.py replays the same file in
// Python. Time is a fake clock: a request takes none, a backoff sleep moves the clock by its delay, and random() is
// the file's.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

import { ClusterGuard, identityRequest, OPENS_UNCHECKED, openedUuid } from "../src/cluster.js";
import { openSender } from "../src/connection.js";
import { SearchError, type StoreError } from "../src/errors.js";
import { CLUSTER_CHECK, RETRY } from "../src/settings.js";
import { Connection, type RetryPolicy } from "../src/transport.js";
import type { Engine } from "../src/types.js";
import { type Answer, ScriptedServer } from "./scripted-server.js";

const GOLDEN = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "golden", "behaviour_cases.json"), "utf8"),
);
const SEARCH = { query: { match_all: {} } };

interface Step {
  idle_s: number;
  answers: Answer[];
  expect: Record<string, unknown>;
}
interface Case {
  name: string;
  op: "request" | "bulk" | "guarded";
  ids?: string[];
  policy?: { deadline_s?: number; base_s?: number; max_s?: number; try_timeout_s?: number };
  open_uuid?: string | null;
  open?: Answer;
  answers?: Answer[];
  expect?: Record<string, unknown>;
  steps?: Step[];
  except?: Record<string, Record<string, unknown>>;
}

/** A case's steps (a one-step case keeps its answers and expectations at the top). */
function stepsOf(c: Case): Step[] {
  return c.steps ?? [{ idle_s: 0, answers: c.answers ?? [], expect: c.expect ?? {} }];
}

/** The outcome of a failed call as the golden file names it. */
function outcomeOf(e: StoreError): Record<string, unknown> {
  const status = e.status === undefined ? {} : { status: e.status };
  if (/ now reaches .*, not cluster /.test(e.message)) return { outcome: "cluster_changed" };
  if (/ no success within /.test(e.message)) return { outcome: "deadline", ...status };
  if (/ could not be reached /.test(e.message)) return { outcome: "unreachable" };
  return { outcome: "status", ...status };
}

/** The connection's policies: the shared ones, with the case's overrides for its kind of call. */
function policiesOf(c: Case) {
  const over = (shared: typeof RETRY.request, mine: boolean) => {
    const p = mine ? (c.policy ?? {}) : {};
    const retry: RetryPolicy = {
      retries: shared.retries,
      baseMs: p.base_s === undefined ? shared.baseMs : p.base_s * 1000,
      capMs: p.max_s === undefined ? shared.capMs : p.max_s * 1000,
    };
    return {
      retry,
      callTimeoutMs: p.deadline_s === undefined ? shared.callTimeoutMs : p.deadline_s * 1000,
      requestTimeoutMs: p.try_timeout_s === undefined ? shared.requestTimeoutMs : p.try_timeout_s * 1000,
    };
  };
  return { request: over(RETRY.request, c.op !== "bulk"), bulk: over(RETRY.bulk, c.op === "bulk") };
}

async function play(conn: Connection, c: Case): Promise<Record<string, unknown>> {
  try {
    if (c.op === "bulk") {
      const ops = (c.ids ?? []).map((id) => ({ action: "index" as const, id, doc: { n: id } }));
      const failures = await conn.bulk("golden", ops, "load golden");
      return { outcome: "ok", failed: failures.map((f) => [f.id, f.status]) };
    }
    await conn.request({ method: "POST", path: "/golden/_search", body: SEARCH, what: "search golden" });
    return { outcome: "ok" };
  } catch (exc) {
    return outcomeOf(exc as StoreError);
  }
}

async function replay(c: Case, engine: Engine): Promise<void> {
  const server = await ScriptedServer.start(engine === "elasticsearch");
  const { send, close } = await openSender(engine, [server.url], { requestTimeoutMs: RETRY.request.requestTimeoutMs });
  let clock = 1_000_000;
  const sleeps: number[] = [];
  try {
    let cluster: ConstructorParameters<typeof Connection>[0]["cluster"];
    if (c.op === "guarded") {
      server.answers = [c.open ?? { uuid: c.open_uuid as string }];
      const identity = identityRequest("golden", engine);
      const opened = await send({ method: "GET", ...identity, what: "open", timeoutMs: 30000 });
      // what connect() accepts: an error status outside OPENS_UNCHECKED fails the open
      assert.ok(opened.status < 400 || OPENS_UNCHECKED.includes(opened.status), `the open fails on HTTP ${opened.status}`);
      const uuid = openedUuid(opened);
      assert.equal(uuid ?? null, c.open_uuid);
      if (uuid !== undefined) cluster = { guard: new ClusterGuard(uuid, CLUSTER_CHECK.idleMs, () => clock), identity };
    }
    const { request, bulk } = policiesOf(c);
    const conn = new Connection({
      engine, version: "test", refresh: "false", send, errorClass: SearchError, secrets: [], urls: [server.url],
      retry: request.retry, limits: { requestTimeoutMs: request.requestTimeoutMs, callTimeoutMs: request.callTimeoutMs },
      bulk, cluster, sleep: async (ms) => void (sleeps.push(Math.round(ms * 1000) / 1e6), (clock += ms)),
      now: () => clock, random: () => GOLDEN.random,
    });
    for (const [n, step] of stepsOf(c).entries()) {
      server.asked.length = 0;
      sleeps.length = 0;
      clock += step.idle_s * 1000;
      server.answers = [...step.answers];
      const got: Record<string, unknown> = { ...(await play(conn, c)), requests: server.asked.map((a) => a.kind), sleeps: [...sleeps] };
      const expected: Record<string, unknown> = { ...step.expect, ...(c.except?.[`typescript-${engine}`] ?? {}) };
      delete expected.why;
      assert.deepEqual(Object.fromEntries(Object.keys(expected).map((k) => [k, got[k]])), expected, `step ${n}`);
      assert.deepEqual(server.answers, [], `step ${n}: answers left unused`);
    }
  } finally {
    await close();
    await server.close();
  }
}

describe("golden behaviour cases (tests/golden/behaviour_cases.json)", () => {
  for (const c of GOLDEN.cases as Case[]) {
    for (const engine of ["elasticsearch", "opensearch"] as const) {
      it(`${c.name} [${engine}]`, () => replay(c, engine));
    }
  }
});
