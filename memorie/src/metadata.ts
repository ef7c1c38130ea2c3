/** The indexed form of metadata and dates, and the exact-match clauses over metadata (shared by the stores' documents). */
import type { Clause } from "./types.js";

/** JSON with object keys sorted, so equal values give equal terms. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

const SEP = "\u001f";

/** The indexed form of metadata: each top-level key, and each key with its value (typed: 5 is not "5"). */
export function metadataTerms(metadata: Record<string, unknown> | undefined): { meta_keys: string[]; meta_kv: string[] } {
  const meta_keys: string[] = [];
  const meta_kv: string[] = [];
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (value === undefined) continue;
    meta_keys.push(key);
    meta_kv.push(`${key}${SEP}${canonicalJson(value)}`);
  }
  return { meta_keys, meta_kv };
}

/** Exact match on top-level metadata keys; a key whose wanted value is `undefined` must be absent. */
export function metadataClauses(filter: Record<string, unknown>): { filter: Clause[]; must_not: Clause[] } {
  const out = { filter: [] as Clause[], must_not: [] as Clause[] };
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined) out.must_not.push({ term: { meta_keys: key } });
    else out.filter.push({ term: { meta_kv: `${key}${SEP}${canonicalJson(value)}` } });
  }
  return out;
}

/** The indexed form of a date: ISO 8601 text (null when there is none). */
export function dateOrNull(value: unknown): string | null {
  return value instanceof Date ? value.toISOString() : value == null ? null : new Date(value as string).toISOString();
}
