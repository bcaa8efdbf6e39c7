import {
  TaskResultNotFoundError,
  type CapacityReport,
  type QueueOverview,
  type RequeueableSegment,
  type ScheduleInfo,
  type Segment,
  type TaskInspector,
  type TaskResult,
  type WorkerInfo,
} from '@threadmill/nestjs';
import { errorMessage } from './format.js';

/** The minutes the queue rates are averaged over. */
const RATE_WINDOW_MINUTES = 5;
/** How long an action's outcome stays in the status line. */
const MESSAGE_MS = 6_000;

/** What the screen needs beyond the overview: one page of one segment, and the run open in the detail pane. */
export interface DataView {
  /** Undefined: the first queue. */
  readonly queue: string | undefined;
  readonly segment: Segment;
  readonly offset: number;
  readonly limit: number;
  readonly runId: string | undefined;
  /**
   * Read each worker's leases too. Only the workers view shows them, and they
   * cost a read of every running run, so other views count workers only.
   */
  readonly leases: boolean;
}

/** A line for the status bar: an action's outcome or a refusal. */
export interface StatusMessage {
  readonly text: string;
  readonly tone: 'info' | 'error';
}

/** Everything read from Redis at the latest refresh, with the outcome of the latest action. */
export interface InspectorSnapshot {
  readonly overview: readonly QueueOverview[];
  /** Redis's memory and the capacity warning; null until read, or when Redis refuses `INFO`. */
  readonly capacity: CapacityReport | null;
  readonly workers: readonly WorkerInfo[];
  /** Whether `workers` were read with their leases (see {@link DataView.leases}); until then they show none. */
  readonly leasesRead: boolean;
  /** Every schedule, with its next and last run. */
  readonly schedules: readonly ScheduleInfo[];
  readonly runs: readonly TaskResult[];
  /** The {@link viewKey} the runs were read for, so a page of another segment is never shown as this one. */
  readonly runsKey: string | undefined;
  /** The run open in the detail pane; null when it no longer exists. */
  readonly detail: TaskResult | null;
  readonly detailId: string | undefined;
  /** Local time of the latest successful refresh; relative times are computed against it. */
  readonly refreshedAt: number | undefined;
  /** Why the latest refresh failed; the previous data stays on screen. */
  readonly error: string | undefined;
  readonly message: StatusMessage | undefined;
  /** An action (requeue, dequeue, cancel, purge, pause, resume) is in flight. */
  readonly busy: boolean;
}

/** Identifies the page of runs a view asks for. */
export const viewKey = (view: DataView): string =>
  `${view.queue ?? ''}\u0000${view.segment}\u0000${view.offset}\u0000${view.limit}`;

const EMPTY: InspectorSnapshot = {
  overview: [],
  capacity: null,
  workers: [],
  leasesRead: false,
  schedules: [],
  runs: [],
  runsKey: undefined,
  detail: null,
  detailId: undefined,
  refreshedAt: undefined,
  error: undefined,
  message: undefined,
  busy: false,
};

/**
 * The one place the inspector UI reads Redis. It polls every `intervalMs`
 * (the next poll is planned when one ends, so a slow Redis is never asked
 * twice at once), refreshes at once when the view changes or an action
 * completes, and publishes immutable snapshots for `useSyncExternalStore`.
 */
export class InspectorStore {
  private snapshot: InspectorSnapshot = EMPTY;
  private view: DataView = { queue: undefined, segment: 'ready', offset: 0, limit: 1, runId: undefined, leases: false };
  private readonly listeners = new Set<() => void>();
  private inFlight: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private messageTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly inspector: TaskInspector,
    private readonly intervalMs: number,
  ) {}

  /** For `useSyncExternalStore`: calls `listener` on every new snapshot. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** For `useSyncExternalStore`: the latest snapshot, the same object until something changes. */
  readonly getSnapshot = (): InspectorSnapshot => this.snapshot;

  /** Stops polling for good; a read in flight is discarded. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.messageTimer);
  }

  /**
   * Asks for another page, segment, queue or detail run and reads it at once
   * when it differs. The first view starts the polling, so the first read is
   * already the right one.
   */
  setView(view: DataView): void {
    const changed =
      viewKey(view) !== viewKey(this.view) || view.runId !== this.view.runId || view.leases !== this.view.leases;
    this.view = view;
    if (changed || !this.started) {
      this.started = true;
      void this.refresh();
    }
  }

  /** Reads everything now. Resolves once the data reflects the view as it is when this is called. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.inFlight) {
      // The read in flight may predate the change that asked for this one: read again after it.
      this.queued ??= this.inFlight.then(() => {
        this.queued = undefined;
        return this.refresh();
      });
      return this.queued;
    }
    clearTimeout(this.timer);
    this.inFlight = this.load(this.view).finally(() => {
      this.inFlight = undefined;
      if (!this.stopped && !this.queued) this.timer = setTimeout(() => void this.refresh(), this.intervalMs);
    });
    return this.inFlight;
  }

  /** Shows `text` in the status line for a few seconds. */
  notify(text: string, tone: StatusMessage['tone'] = 'info'): void {
    clearTimeout(this.messageTimer);
    this.update({ message: { text, tone } });
    this.messageTimer = setTimeout(() => this.update({ message: undefined }), MESSAGE_MS);
  }

  /** Cancels a pending or running run: it ends CANCELLED (a running attempt is aborted by its worker). */
  cancel(id: string): Promise<void> {
    return this.perform(async () => {
      const { cancelled } = await this.inspector.cancel(id);
      return cancelled ? `Cancelled run ${id}.` : `Run ${id} was already cancelled.`;
    });
  }

  /** Sends a FAILED, QUARANTINED or CANCELLED run back to READY. */
  requeue(id: string): Promise<void> {
    return this.perform(async () => {
      const run = await this.inspector.requeue(id);
      return `Requeued run ${id} (now ${run.status}).`;
    });
  }

  /** Sends every run of a queue's failed, quarantined or cancelled segment back to READY. */
  requeueAll(queue: string, segment: RequeueableSegment): Promise<void> {
    return this.perform(async () => {
      // A large segment is requeued in chunks: each one's progress shows meanwhile.
      const requeued = await this.inspector.requeueAll(queue, segment, {
        onProgress: ({ requeued: sofar, done }) => {
          if (!done) {
            this.update({
              message: { text: `Requeueing ${segment} runs of ${queue}: ${sofar} so far…`, tone: 'info' },
            });
          }
        },
      });
      return `Requeued ${requeued} ${segment} run${requeued === 1 ? '' : 's'} of queue ${queue}.`;
    });
  }

  /** Removes a pending run. */
  dequeue(id: string): Promise<void> {
    return this.perform(async () => {
      await this.inspector.dequeue(id);
      return `Dequeued run ${id}.`;
    });
  }

  /** Removes every run of a queue. */
  purge(queue: string): Promise<void> {
    return this.perform(async () => {
      // A large queue is purged in chunks: each one's progress shows meanwhile.
      const removed = await this.inspector.purge(queue, {
        onProgress: ({ removed: sofar, done }) => {
          if (!done) this.update({ message: { text: `Purging queue ${queue}: ${sofar} runs removed…`, tone: 'info' } });
        },
      });
      return `Purged queue ${queue}: ${removed} run${removed === 1 ? '' : 's'} removed.`;
    });
  }

  /** Pauses a queue (no worker claims its runs; running ones finish), or resumes a paused one. */
  togglePause(queue: string, paused: boolean): Promise<void> {
    return this.perform(async () => {
      if (paused) {
        await this.inspector.resume(queue);
        return `Resumed queue ${queue}: workers claim its runs again.`;
      }
      await this.inspector.pause(queue);
      return `Paused queue ${queue}: no new run starts; running ones finish.`;
    });
  }

  /** Runs an action; its outcome or error goes to the status line, never up the stack. */
  private async perform(action: () => Promise<string>): Promise<void> {
    this.update({ busy: true });
    try {
      this.notify(await action(), 'info');
    } catch (error) {
      this.notify(errorMessage(error), 'error');
    } finally {
      this.update({ busy: false });
    }
    await this.refresh();
  }

  private async load(view: DataView): Promise<void> {
    const { inspector } = this;
    try {
      const overviewRead = inspector.overview(RATE_WINDOW_MINUTES);
      // No queue chosen yet: show the first one.
      const queue = view.queue ?? (await overviewRead)[0]?.queue;
      const [overview, capacity, workers, runs, detail, schedules] = await Promise.all([
        overviewRead,
        // A managed Redis may refuse INFO: the rest of the screen still shows.
        inspector.capacity().catch(() => null),
        view.leases
          ? inspector.workers()
          : inspector.liveWorkers().then((live) => live.map((worker) => ({ ...worker, leases: [] }))),
        queue ? inspector.list(queue, view.segment, { offset: view.offset, limit: view.limit }) : [],
        view.runId ? inspector.get(view.runId).catch(notFoundAsNull) : null,
        inspector.schedules(),
      ]);
      this.update({
        overview,
        capacity,
        workers,
        leasesRead: view.leases,
        schedules,
        runs,
        runsKey: viewKey({ ...view, queue }),
        detail,
        detailId: view.runId,
        // On Redis's clock, which every time shown beside it is on.
        refreshedAt: this.inspector.now(),
        error: undefined,
      });
    } catch (error) {
      this.update({ error: errorMessage(error) });
    }
  }

  private update(change: Partial<InspectorSnapshot>): void {
    if (this.stopped) return;
    this.snapshot = { ...this.snapshot, ...change };
    for (const listener of this.listeners) listener();
  }
}

function notFoundAsNull(error: unknown): null {
  // The run was dequeued, purged or expired since it was opened.
  if (error instanceof TaskResultNotFoundError) return null;
  throw error;
}
