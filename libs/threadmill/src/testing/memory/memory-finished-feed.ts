import type { FinishedEntry, FinishedFeed, ReportedEntry } from '../../backend/task-backend.js';

/** Entries are numbered like Redis stream ids (`<n>-0`), so `'0-0'` is before the first. */
const sequence = (id: string): number => Number(id.split('-', 1)[0]);

/**
 * The feed of registered runs that settled or were removed, kept in process:
 * the in-memory counterpart of the `finished` stream with its `waiting`
 * registrations (see `lua/includes/finished.lua`), so `TaskQueue.waitFor`
 * works unchanged.
 */
export class MemoryFinishedLog {
  private readonly entries: { readonly seq: number; readonly entry: FinishedEntry }[] = [];
  private last = 0;
  /** Run id → registration expiry (epoch ms). */
  private readonly waiting = new Map<string, number>();
  private readonly readers = new Set<() => void>();

  get lastId(): string {
    return `${this.last}-0`;
  }

  /** Registers `id` until `expiry` (a registration only ever gets later). */
  register(id: string, expiry: number): void {
    this.waiting.set(id, Math.max(expiry, this.waiting.get(id) ?? 0));
  }

  /** Publishes `entry` when somebody registered its run, and ends the registration. */
  publish(entry: FinishedEntry, now: number): void {
    const expiry = this.waiting.get(entry.id);
    if (expiry === undefined) return;
    this.waiting.delete(entry.id);
    if (expiry < now) return;
    this.push(entry);
  }

  /** Publishes what a running attempt of `id` reported, when somebody registered it; it stays registered. */
  report(id: string, reported: ReportedEntry, now: number): void {
    const expiry = this.waiting.get(id);
    if (expiry === undefined || expiry < now) return;
    this.push({ id, reported });
  }

  private push(entry: FinishedEntry): void {
    this.entries.push({ seq: ++this.last, entry });
    for (const wake of this.readers) wake();
  }

  /** A reader of the log from any position, as `TaskBackend.finishedFeed` returns it. */
  reader(onReady: () => void): FinishedFeed {
    let closed = false;
    let wakeCurrent: (() => void) | undefined;
    // Called once the feed exists, as the Redis feed calls it once its connection is ready.
    queueMicrotask(() => {
      if (!closed) onReady();
    });
    return {
      read: (afterId, timeoutMs) =>
        new Promise((resolve) => {
          const after = sequence(afterId);
          const answer = (): boolean => {
            const found = this.entries.filter((e) => e.seq > after);
            if (found.length === 0 && !closed) return false;
            finish();
            resolve({
              lastId: found.length > 0 ? `${found[found.length - 1]!.seq}-0` : afterId,
              entries: found.map((e) => e.entry),
            });
            return true;
          };
          const timer = setTimeout(() => {
            finish();
            resolve({ lastId: afterId, entries: [] });
          }, timeoutMs);
          const finish = (): void => {
            clearTimeout(timer);
            this.readers.delete(wake);
            wakeCurrent = undefined;
          };
          const wake = (): void => void answer();
          if (answer()) return;
          this.readers.add(wake);
          wakeCurrent = wake;
        }),
      close: () => {
        closed = true;
        wakeCurrent?.();
      },
    };
  }
}
