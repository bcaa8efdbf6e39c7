import type { LeaseRef } from '../backend/task-backend.js';
import type { LeaseKeeper } from './lease-keeper.js';

/**
 * How often executing attempts are looked at. An attempt seen executing at
 * two looks in a row has its start recorded: one that ends sooner never
 * costs Redis a write (its acknowledgement says it ran), and one killed
 * sooner is not charged (docs/storage.md, "Start marks after the start").
 * Short enough that a task which runs for a while is charged when its
 * worker dies, long enough that quick tasks never need a mark.
 */
const LOOK_EVERY_MS = 20;

/** Where the recorded starts go: the next acknowledgement call. */
export interface StartSink {
  recordStarts(runs: readonly LeaseRef[]): void;
}

/**
 * Records that attempts started, after the fact and in batches. While any
 * attempt executes, a timer looks at the held leases every
 * {@link LOOK_EVERY_MS}; an attempt executing at two looks in a row is
 * recorded once, with the next acknowledgement call. Starting an attempt
 * costs a flag; nothing is allocated per run.
 */
export class StartMarks {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly keeper: LeaseKeeper,
    private readonly sink: StartSink,
  ) {}

  /** An attempt began and is still executing: look at it soon. */
  attemptStarted(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(this.look, LOOK_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly look = (): void => {
    const { runs, executing } = this.keeper.longRunningStarts();
    if (runs.length > 0) this.sink.recordStarts(runs);
    this.timer = undefined;
    if (executing) this.attemptStarted();
  };
}
