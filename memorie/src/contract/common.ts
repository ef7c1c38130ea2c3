import { randomUUID } from "node:crypto";
import { it } from "node:test";

import type { Memory, MemoryRelation } from "../types.js";

/** How a contract suite gets its stores: a fresh, empty one per case, and how to remove it afterwards. */
export interface ContractTarget<S> {
  create(): Promise<S>;
  destroy?(store: S): Promise<void>;
}

/** One case with a fresh store that is destroyed afterwards, pass or fail. */
export function storeCase<S>(target: ContractTarget<S>, title: string, body: (store: S) => Promise<void>): void {
  it(title, async () => {
    const store = await target.create();
    try {
      await body(store);
    } finally {
      await target.destroy?.(store);
    }
  });
}

export function makeMemory(overrides: Partial<Memory> = {}): Memory {
  const now = new Date();
  const m: Memory = {
    id: randomUUID(),
    namespace: "test",
    subjectId: "subject-1",
    type: "fact",
    content: "test content",
    state: "active",
    importance: 0.5,
    confidence: 0.5,
    metadata: {},
    createdAt: now,
    updatedAt: now,
    accessCount: 0,
    expiresAt: null,
    version: 1,
    ...overrides,
  };
  return m;
}

export function makeRelation(overrides: Partial<MemoryRelation> = {}): MemoryRelation {
  return {
    id: randomUUID(),
    fromMemoryId: "memory-a",
    toMemoryId: "memory-b",
    type: "related_to",
    createdAt: new Date(),
    ...overrides,
  };
}

export function unitVector(dims: number, index: number): number[] {
  const v = new Array<number>(dims).fill(0);
  v[index] = 1;
  return v;
}

/** Expect `fn` to reject with an error of `code` whose message matches `pattern`. */
export async function rejectsWithCode(fn: () => Promise<unknown>, code: string, pattern?: RegExp): Promise<Error> {
  let caught: unknown;
  try {
    await fn();
  } catch (exc) {
    caught = exc;
  }
  if (!(caught instanceof Error)) throw new Error(`expected an error with code ${code}, got ${String(caught)}`);
  const got = (caught as { code?: string }).code;
  if (got !== code) throw new Error(`expected code ${code}, got ${got}: ${caught.message}`);
  if (pattern && !pattern.test(caught.message)) throw new Error(`message ${JSON.stringify(caught.message)} !~ ${pattern}`);
  return caught;
}
