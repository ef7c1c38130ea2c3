// The stores a Memorie user runs today, written for this bench in our own words from the shapes in
// /work/shared/MEMORIE.md: an FTS5 SearchStore on better-sqlite3 and a brute-force in-process cosine VectorStore.
// They are baselines to measure against, not part of reme-es-memorie (better-sqlite3 is a bench-only dependency:
// bench/memorie/package.json).
import { createRequire } from "node:module";

// Loaded when an FTS5 store is made, so the vector-only scripts (bench/memorie/recall.mjs) run without it.
const require = createRequire(import.meta.url);

const DATE_KEYS = ["createdAt", "updatedAt", "lastAccessedAt", "expiresAt"];

function revive(json) {
  const m = JSON.parse(json);
  for (const k of DATE_KEYS) if (typeof m[k] === "string") m[k] = new Date(m[k]);
  return m;
}

/**
 * SearchStore on SQLite FTS5: `porter unicode61` tokenizer, bm25 ranking (score = raw / (raw + 1)), every word
 * required, tenant/namespace/subject scope and type/state filters in SQL; without text, newest `updatedAt` first.
 * A file database in WAL mode with synchronous=NORMAL.
 */
export class Fts5SearchStore {
  constructor(path) {
    const Database = require("better-sqlite3");
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS memories (
        rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, tenant_id TEXT, namespace TEXT, subject_id TEXT,
        type TEXT, state TEXT, updated_at INTEGER, record TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS memories_scope ON memories (tenant_id, namespace, updated_at);
      CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (content, tokenize = 'porter unicode61');`);
    this.upsertRow = this.db.prepare(`
      INSERT INTO memories (id, tenant_id, namespace, subject_id, type, state, updated_at, record)
      VALUES (@id, @tenant_id, @namespace, @subject_id, @type, @state, @updated_at, @record)
      ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, namespace = excluded.namespace,
        subject_id = excluded.subject_id, type = excluded.type, state = excluded.state,
        updated_at = excluded.updated_at, record = excluded.record
      RETURNING rowid`);
    this.deleteText = this.db.prepare("DELETE FROM memories_fts WHERE rowid = ?");
    this.insertText = this.db.prepare("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)");
    this.indexTx = this.db.transaction((memories) => {
      for (const m of memories) this.write(m);
    });
    this.statements = new Map();
  }

  write(m) {
    const { rowid } = this.upsertRow.get({
      id: m.id, tenant_id: m.tenantId ?? null, namespace: m.namespace, subject_id: m.subjectId, type: m.type,
      state: m.state, updated_at: m.updatedAt.getTime(), record: JSON.stringify(m),
    });
    this.deleteText.run(rowid);
    this.insertText.run(rowid, m.content);
  }

  async index(m) {
    this.indexTx([m]);
  }

  /** Bulk load in one transaction. */
  indexMany(memories) {
    this.indexTx(memories);
  }

  statement(withText, keys) {
    const key = `${withText}|${keys.join(",")}`;
    let s = this.statements.get(key);
    if (!s) {
      const where = keys.map((k) => (k.endsWith("[]") ? `m.${k.slice(0, -2)} IN (SELECT value FROM json_each(@${k.slice(0, -2)}))` : `m.${k} = @${k}`));
      const sql = withText
        ? `SELECT m.record, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
           WHERE memories_fts MATCH @match ${where.map((w) => `AND ${w}`).join(" ")} ORDER BY rank LIMIT @limit OFFSET @offset`
        : `SELECT m.record FROM memories m ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
           ORDER BY m.updated_at DESC LIMIT @limit OFFSET @offset`;
      s = this.db.prepare(sql);
      this.statements.set(key, s);
    }
    return s;
  }

  async search(query) {
    const params = { limit: query.limit ?? 20, offset: query.offset ?? 0 };
    const keys = [];
    for (const [k, col] of [["tenantId", "tenant_id"], ["namespace", "namespace"], ["subjectId", "subject_id"]]) {
      if (query[k] !== undefined) {
        keys.push(col);
        params[col] = query[k];
      }
    }
    for (const k of ["type", "state"]) {
      const v = query.filters?.[k];
      if (v !== undefined) {
        keys.push(`${k}[]`);
        params[k] = JSON.stringify(Array.isArray(v) ? v : [v]);
      }
    }
    const text = query.query?.trim();
    if (text) {
      params.match = text.split(/\s+/).map((w) => `"${w.replaceAll('"', '""')}"`).join(" ");
      return this.statement(true, keys).all(params).map((row) => {
        const raw = -row.rank;
        return { memory: revive(row.record), score: raw / (raw + 1), matchedSignals: ["keyword"] };
      });
    }
    return this.statement(false, keys).all(params).map((row) => ({ memory: revive(row.record), score: 1, matchedSignals: ["structured"] }));
  }

  async delete(id) {
    const row = this.db.prepare("SELECT rowid FROM memories WHERE id = ?").get(id);
    if (!row) return;
    this.deleteText.run(row.rowid);
    this.db.prepare("DELETE FROM memories WHERE rowid = ?").run(row.rowid);
  }

  close() {
    if (this.db.open) this.db.close();
  }
}

/** VectorStore in process: every entry compared by cosine; score (cos + 1) / 2; zero vectors score 0.5. */
export class BruteForceVectorStore {
  constructor() {
    this.entries = new Map();
  }

  async upsert(id, embedding, metadata) {
    this.entries.set(id, { embedding, metadata });
  }

  async search(embedding, options = {}) {
    const topK = options.topK ?? 10;
    const out = [];
    for (const [id, e] of this.entries) {
      if (options.filter && (!e.metadata || Object.entries(options.filter).some(([k, v]) => e.metadata[k] !== v))) continue;
      const score = (cosine(embedding, e.embedding) + 1) / 2;
      if (options.threshold !== undefined && score < options.threshold) continue;
      out.push({ id, score, metadata: e.metadata });
    }
    out.sort((a, b) => b.score - a.score);
    return out.slice(0, topK);
  }

  async delete(id) {
    this.entries.delete(id);
  }

  /** The score of one stored entry for a query (for recall with ties). */
  score(embedding, id) {
    const e = this.entries.get(id);
    return e ? (cosine(embedding, e.embedding) + 1) / 2 : -1;
  }
}

function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
