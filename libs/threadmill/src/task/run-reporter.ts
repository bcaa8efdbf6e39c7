import type { ReportStore } from '../backend/backend-roles.js';
import type { LeaseRef, RunReport } from '../backend/task-backend.js';
import { LeaseLostError } from '../errors/lease-lost.error.js';
import { MAX_LOG_LINES } from '../records/run-report-limits.js';
import type { StoredDependency } from '../records/flow-records.js';

/** What one run reported that has not gone out yet, and who waits for it to land. */
interface Pending {
  readonly ref: LeaseRef;
  progress: string | undefined;
  lines: string[];
  readonly landed: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * Sends what a process's running attempts report (`context.progress`,
 * `context.log`) to the backend, coalesced: one call at a time carries, per
 * run, the latest progress value and the lines logged since the previous
 * call (at most `MAX_LOG_LINES`, the last ones: a run keeps no more), so a
 * flood of log lines costs a call per round trip, not one per line.
 *
 * Each write's promise resolves once the call that carried it stored it, and
 * rejects with `LeaseLostError` when its lease no longer held (nothing was
 * stored) or with the call's error. A write nobody awaits never rejects
 * unheard. Writes are not retried: a failed call loses its writes, and the
 * attempt goes on.
 */
export class RunReporter {
  /** Per run and lease, what waits for the next call. */
  private waiting = new Map<string, Pending>();
  /** Per run and lease, the latest write's promise (never rejecting), until it lands. */
  private readonly latest = new Map<string, Promise<void>>();
  private sending = false;

  constructor(private readonly backend: ReportStore) {}

  /** What the dependencies of flow node `runId` ended with (`context.dependencies()`): a read beside the attempt's writes. */
  dependencies(runId: string): Promise<StoredDependency[]> {
    return this.backend.flows.dependencies(runId);
  }

  /** Stores `json` as the run's progress (replacing a value not yet sent). */
  progress(ref: LeaseRef, json: string): Promise<void> {
    const pending = this.pending(ref);
    pending.progress = json;
    return pending.landed;
  }

  /** Appends `line` (no newline, already cut to size) to the run's log. */
  log(ref: LeaseRef, line: string): Promise<void> {
    const pending = this.pending(ref);
    pending.lines.push(line);
    // The run keeps the last lines only: older ones need not travel.
    if (pending.lines.length > 2 * MAX_LOG_LINES) pending.lines.splice(0, pending.lines.length - MAX_LOG_LINES);
    return pending.landed;
  }

  /**
   * Resolves once every write of the run under this lease landed or failed
   * (never rejects); undefined when none is waiting or in flight, the case of
   * every run that reports nothing.
   */
  settled(ref: LeaseRef): Promise<void> | undefined {
    return this.latest.size === 0 ? undefined : this.latest.get(keyOf(ref));
  }

  private pending(ref: LeaseRef): Pending {
    const key = keyOf(ref);
    let pending = this.waiting.get(key);
    if (pending) return pending;
    let resolve!: () => void;
    let reject!: (error: Error) => void;
    const landed = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Handled here, so a write nobody awaits is no unhandled rejection; an awaiting caller still gets it.
    const quiet = landed.catch(() => undefined);
    pending = { ref, progress: undefined, lines: [], landed, resolve, reject };
    this.waiting.set(key, pending);
    this.latest.set(key, quiet);
    void quiet.then(() => {
      if (this.latest.get(key) === quiet) this.latest.delete(key);
    });
    if (!this.sending) {
      this.sending = true;
      // Writes of the same turn of the event loop go out together.
      setImmediate(() => void this.send());
    }
    return pending;
  }

  /** Sends what waits, one call at a time, until nothing does. */
  private async send(): Promise<void> {
    while (this.waiting.size > 0) {
      const batch = [...this.waiting.values()];
      this.waiting = new Map();
      const reports: RunReport[] = batch.map(({ ref, progress, lines }) => ({
        id: ref.id,
        queue: ref.queue,
        token: ref.token,
        ...(progress === undefined ? {} : { progress }),
        lines: lines.length > MAX_LOG_LINES ? lines.slice(-MAX_LOG_LINES) : lines,
      }));
      try {
        const stored = await this.backend.report(reports);
        batch.forEach((pending, i) =>
          stored[i] ? pending.resolve() : pending.reject(new LeaseLostError(pending.ref.id)),
        );
      } catch (error) {
        for (const pending of batch) pending.reject(error as Error);
      }
    }
    this.sending = false;
  }
}

const keyOf = (ref: LeaseRef): string => `${ref.token}\n${ref.id}`;
