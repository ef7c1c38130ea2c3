/**
 * The shape of the filters a caller gives, checked before any request: a SearchStore query's scope and `filters`, a
 * VectorStore search's `filter`. A filter the stores do not understand (an unknown key, a bare value where a range
 * is expected, a value that has no JSON form) is an error that names it, never dropped: dropping it would return
 * unfiltered results. Each function returns the problem, or undefined when the shape is right; the store wraps it in
 * its own error class. The values of range bounds are checked where they are translated (dialect.ts `rangeClause`).
 */

/** A value for an error message: JSON where that says what it is (a string is quoted), else its type. */
export function describeValue(v: unknown): string {
  if (v === undefined || v === null) return String(v);
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  if (typeof v === "bigint") return `${v}n (a bigint)`;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? "an invalid Date" : `Date ${v.toISOString()}`;
  let text: string | undefined;
  try {
    text = JSON.stringify(v);
  } catch {
    text = undefined;
  }
  if (text === undefined) return typeof v === "function" ? "a function" : typeof v;
  if (text.length > 80) text = `${text.slice(0, 77)}...`;
  if (Array.isArray(v)) return `the array ${text}`;
  return isPlainObject(v) || typeof v !== "object" ? text : `a ${v?.constructor?.name ?? "object"} ${text}`;
}

/** An object literal (or `Object.create(null)`): not an array, Date, Map, class instance, string or number. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object") return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const FILTER_KEYS = ["type", "state", "importance", "confidence", "createdAt", "updatedAt", "metadata"] as const;
const RANGE_KEYS = { importance: "number", confidence: "number", createdAt: "date", updatedAt: "date" } as const;
const BOUNDS = ["eq", "gte", "gt", "lte", "lt"];
const EXAMPLE = '{type: "fact", importance: {gte: 0.5}, metadata: {topic: "tea"}}';

/** Edit distance of two short strings (for "did you mean"). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

function didYouMean(key: string, known: readonly string[]): string {
  const best = Math.min(...known.map((k) => distance(key, k)));
  const near = best <= 2 ? known.filter((k) => distance(key, k) === best) : [];
  return near.length > 0 ? ` (did you mean ${near.map((k) => JSON.stringify(k)).join(" or ")}?)` : "";
}

/** What is wrong with one value of an exact-match metadata filter (`where` names it), or undefined. */
export function metadataValueProblem(value: unknown, where: string): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${where} is ${value}, which has no JSON form to match`;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? `${where} is an invalid Date` : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = metadataValueProblem(value[i], `${where}[${i}]`);
      if (p) return p;
    }
    return undefined;
  }
  if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      const p = v === undefined ? undefined : metadataValueProblem(v, `${where}.${k}`);
      if (p) return p;
    }
    return undefined;
  }
  return `${where} is ${describeValue(value)}: an exact match takes a string, number, boolean, null, Date, or an array or plain object of those`;
}

/** The keys of an exact-match metadata filter (top-level `undefined`: the key must be absent). */
function metadataFilterProblem(filter: Record<string, unknown>, where: string): string | undefined {
  for (const [key, value] of Object.entries(filter)) {
    const p = value === undefined ? undefined : metadataValueProblem(value, `${where}.${key}`);
    if (p) return p;
  }
  return undefined;
}

function rangeProblem(name: keyof typeof RANGE_KEYS, range: unknown): string | undefined {
  const example = RANGE_KEYS[name] === "number" ? "{eq: 0.5} or {gte: 0.2, lt: 0.8}" : '{gte: new Date("2026-01-01")}';
  if (!isPlainObject(range)) {
    const bare = RANGE_KEYS[name] === "number" ? typeof range === "number" : range instanceof Date;
    const hint = bare ? `; for equality write {eq: ${RANGE_KEYS[name] === "number" ? String(range) : "<the Date>"}}` : "";
    return `filters.${name} must be a range such as ${example}, not ${describeValue(range)}${hint}`;
  }
  for (const bound of Object.keys(range)) {
    if (!BOUNDS.includes(bound)) {
      return `filters.${name}.${bound} is not a bound${didYouMean(bound, BOUNDS)}: a range takes eq, gte, gt, lte, lt (e.g. ${example})`;
    }
  }
  return undefined;
}

function stringsProblem(name: string, value: unknown): string | undefined {
  const values = Array.isArray(value) ? value : [value];
  const bad = values.findIndex((v) => typeof v !== "string");
  if (bad < 0) return undefined;
  const what = Array.isArray(value) ? `filters.${name}[${bad}] is ${describeValue(values[bad])}` : `not ${describeValue(value)}`;
  return `filters.${name} must be a string or an array of strings, ${what}`;
}

/** What is wrong with a SearchQuery's scope keys and `filters`, or undefined. Keys set to `undefined` count as absent. */
export function searchQueryProblem(query: { tenantId?: unknown; namespace?: unknown; subjectId?: unknown; filters?: unknown }): string | undefined {
  for (const key of ["tenantId", "namespace", "subjectId"] as const) {
    const v = query[key];
    if (v !== undefined && typeof v !== "string") return `${key} must be a string, not ${describeValue(v)}`;
  }
  const filters = query.filters;
  if (filters === undefined) return undefined;
  if (!isPlainObject(filters)) return `filters must be an object such as ${EXAMPLE}, not ${describeValue(filters)}`;
  for (const [key, value] of Object.entries(filters)) {
    if (value === undefined) continue;
    if (!(FILTER_KEYS as readonly string[]).includes(key)) {
      return `filters.${key} is not a filter${didYouMean(key, FILTER_KEYS)}: the filters are ${FILTER_KEYS.join(", ")}`;
    }
    let p: string | undefined;
    if (key === "type" || key === "state") p = stringsProblem(key, value);
    else if (key === "metadata") {
      p = isPlainObject(value)
        ? metadataFilterProblem(value, "filters.metadata")
        : `filters.metadata must be an object of top-level metadata key -> exact value, such as {topic: "tea"}, not ${describeValue(value)}`;
    } else p = rangeProblem(key as keyof typeof RANGE_KEYS, value);
    if (p) return p;
  }
  return undefined;
}

/**
 * What is wrong with a VectorStore search's `filter` (exact match on the entries' metadata keys), or undefined. The
 * filter is the metadata itself, so a key `metadata` is refused: it is the SearchStore's shape
 * (`filters: {metadata: {...}}`) given to the vector store, where it would match nothing.
 */
export function vectorFilterProblem(filter: unknown): string | undefined {
  if (filter === undefined) return undefined;
  const shape = 'an object of metadata key -> exact value, such as {tenantId: "acme"}';
  if (!isPlainObject(filter)) return `filter must be ${shape}, not ${describeValue(filter)}`;
  if (Object.prototype.hasOwnProperty.call(filter, "metadata")) {
    return `filter.metadata: the filter is matched against the entries' metadata itself, so give its keys directly (${shape}), not {metadata: ...}`;
  }
  return metadataFilterProblem(filter, "filter");
}
