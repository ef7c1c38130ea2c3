/** The pure plans of a tenant restore (restore.ts): which snapshot index holds each kind, the temporary copies' names,
 * and the count check at the end. */
import { type IndexKind, indexNames } from "./dialect.js";
import { RestoreError } from "./errors.js";

export const KINDS: readonly IndexKind[] = ["memories", "vectors", "relations"];
/** Temporary copies: `restore-<token>-<snapshot index>`, outside every store's `<prefix>-memorie-*`. */
export const TEMP_PREFIX = "restore";

/** The snapshot's index of each Memorie kind of `prefix` (kind -> index name and template version). */
export function snapshotIndices(indices: string[], prefix: string): Map<IndexKind, { index: string; version: number }> {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const own = new RegExp(`^${escaped}-memorie-(${KINDS.join("|")})-v(\\d+)$`);
  const found = new Map<IndexKind, { index: string; version: number }[]>();
  for (const index of indices) {
    const m = own.exec(index);
    if (!m) continue;
    const kind = m[1] as IndexKind;
    found.set(kind, [...(found.get(kind) ?? []), { index, version: Number(m[2]) }]);
  }
  const twice = [...found].filter(([, names]) => names.length > 1);
  if (twice.length > 0) {
    const listed = twice.map(([kind, names]) => `${kind}: ${names.map((n) => n.index).join(", ")}`).join("; ");
    throw new RestoreError(
      `the snapshot holds more than one index of a kind of prefix ${prefix} (${listed}): restore it with the snapshot ` +
        "API by index name. Nothing was changed",
    );
  }
  if (found.size === 0) {
    throw new RestoreError(
      `the snapshot holds no index of prefix ${prefix} (no ${prefix}-memorie-<kind>-v<n>; it holds ` +
        `${indices.join(", ") || "no index"}). Nothing was changed`,
    );
  }
  return new Map(KINDS.filter((k) => found.has(k)).map((k) => [k, (found.get(k) as { index: string; version: number }[])[0]!]));
}

/** One kind of a tenant restore: the snapshot's index, its temporary copy and the live alias it goes back into. */
export interface KindPlan {
  kind: IndexKind;
  source: string;
  version: number;
  temp: string;
  alias: string;
}

export interface RestorePlan {
  token: string;
  kinds: KindPlan[];
  /** The restore's rename_pattern and rename_replacement: every restored index gets the temporary prefix. */
  rename: [string, string];
}

/** The plan of restoring a tenant of `prefix` from a snapshot holding `indices`; `token`: lowercase letters, digits. */
export function planRestore(indices: string[], prefix: string, token: string): RestorePlan {
  if (!/^[a-z0-9]+$/.test(token)) throw new RestoreError(`a restore token is lowercase letters and digits, not ${JSON.stringify(token)}`);
  const kinds = [...snapshotIndices(indices, prefix)].map(([kind, { index, version }]) => ({
    kind,
    source: index,
    version,
    temp: `${TEMP_PREFIX}-${token}-${index}`,
    alias: indexNames(prefix, kind).alias,
  }));
  return { token, kinds, rename: ["(.+)", `${TEMP_PREFIX}-${token}-$1`] };
}

/** The kinds whose live count of the tenant differs from the snapshot's, described; [] when all agree. */
export function countMismatches(wanted: Partial<Record<IndexKind, number>>, got: Partial<Record<IndexKind, number>>): string[] {
  return Object.entries(wanted)
    .filter(([kind, n]) => got[kind as IndexKind] !== n)
    .map(([kind, n]) => `${kind}: ${got[kind as IndexKind] ?? 0} live, ${n} in the snapshot`);
}
