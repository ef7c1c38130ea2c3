/**
 * When a store's writes become searchable under the default `refresh: "deferred"` policy.
 *
 * Memorie's engine assumes read-your-writes, and a refresh per write (`refresh: "true"`) gives it at the price of a
 * new Lucene segment per write: each `engine.add()` made two, and the node kept merging them (for vectors, every
 * merge rebuilds an HNSW graph). Under `deferred`, writes are sent with `refresh=false` and the store refreshes an
 * index only when it matters (the Python file store's model, `reme_es/reme/visibility.py`):
 *
 * - before a read of this store that follows writes to that index: one refresh, however many writes came before,
 *   shared by concurrent readers, so a caller always sees its own writes;
 * - in the background `refreshAfterMs` after the last write (at most 10x that during a steady stream of writes),
 *   so other processes reading the same index see the changes soon too (the timer never keeps Node alive);
 * - at `close()`.
 *
 * A write that failed still counts as a write: what it left behind is refreshed before the next read.
 */

export const MAX_DELAY_FACTOR = 10; // a steady stream of writes is refreshed at least every refreshAfterMs x this

interface IndexState {
  /** When the oldest write not yet refreshed finished (ms, monotonic); null when everything is searchable. */
  since: number | null;
  lastWrite: number;
  inFlight: Promise<void> | null;
  timer: ReturnType<typeof setTimeout> | null;
}

/** Refresh scheduling for the indices of one connection. */
export class DeferredRefresh {
  private readonly state = new Map<string, IndexState>();
  /** How many refreshes this object completed (reads, background, close): for tests and the benchmark. */
  refreshes = 0;
  /** The last background refresh failure (the next read refreshes again; nothing is lost). */
  lastBackgroundError: unknown = null;

  constructor(
    private readonly refresh: (index: string) => Promise<void>,
    readonly refreshAfterMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  private of(index: string): IndexState {
    let s = this.state.get(index);
    if (!s) {
      s = { since: null, lastWrite: 0, inFlight: null, timer: null };
      this.state.set(index, s);
    }
    return s;
  }

  /** Whether a write to `index` is not searchable yet. */
  pending(index: string): boolean {
    return this.state.get(index)?.since != null;
  }

  /**
   * A write to `index` finished (or failed): the next read refreshes first; the background refresh is scheduled
   * unless `background` is false (a bulk load: the node's scheduled refresh, put back after it, shows it to others;
   * a refresh between its parts would only cut small segments for the node to merge).
   */
  written(index: string, background = true): void {
    const s = this.of(index);
    const t = this.now();
    s.lastWrite = t;
    if (s.since === null) s.since = t;
    if (background && s.timer === null) this.schedule(index, s);
  }

  /** Before a read of `index`: refresh once if a write finished since the last refresh began. */
  async beforeRead(index: string): Promise<void> {
    const s = this.state.get(index);
    if (!s) return;
    if (s.since !== null) {
      await this.refreshNow(index, s);
    } else if (s.inFlight) {
      await s.inFlight; // a refresh that began after this reader's writes finished covers them
    }
  }

  /** Refresh `index` now (the store's `refresh()`): pending writes are then searchable. */
  refreshAll(index: string): Promise<void> {
    return this.refreshNow(index, this.of(index));
  }

  private refreshNow(index: string, s: IndexState): Promise<void> {
    const since = s.since;
    s.since = null; // a write finishing during this refresh sets it again
    const p = this.refresh(index).then(
      () => {
        this.refreshes++;
        if (s.inFlight === p) s.inFlight = null;
      },
      (exc) => {
        if (s.inFlight === p) s.inFlight = null;
        if (s.since === null) s.since = since;
        throw exc;
      },
    );
    s.inFlight = p;
    return p;
  }

  private schedule(index: string, s: IndexState): void {
    if (s.since === null) return;
    const due = Math.min(s.lastWrite + this.refreshAfterMs, s.since + this.refreshAfterMs * MAX_DELAY_FACTOR);
    const delay = Math.max(0, due - this.now());
    s.timer = setTimeout(() => {
      s.timer = null;
      const t = this.now();
      if (s.since === null) return;
      if (t < Math.min(s.lastWrite + this.refreshAfterMs, s.since + this.refreshAfterMs * MAX_DELAY_FACTOR)) {
        this.schedule(index, s); // written again since: wait for a quiet moment
        return;
      }
      this.refreshNow(index, s).catch((exc) => {
        this.lastBackgroundError = exc;
      });
    }, delay);
    s.timer.unref?.();
  }

  /** Stop the timers and refresh what is pending (at close); errors are thrown after every index was tried. */
  async flush(): Promise<void> {
    let first: unknown = null;
    for (const [index, s] of this.state) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = null;
      try {
        if (s.since !== null) await this.refreshNow(index, s);
        else if (s.inFlight) await s.inFlight;
      } catch (exc) {
        first ??= exc;
      }
    }
    if (first) throw first;
  }
}
