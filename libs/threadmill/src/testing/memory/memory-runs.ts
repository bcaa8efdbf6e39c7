import type { MemoryClock } from './memory-clock.js';
import type { MemoryQueue } from './memory-queue.js';
import type { MemoryRun } from './memory-run.js';
import type { MemoryWakeups } from './memory-signals.js';

/**
 * What the parts of the in-memory backend that hold their own keys (dedupe
 * keys, limit groups) read of the whole: runs by id, queues by name, the
 * clock and the wake-ups. `MemoryState` is one; they depend on this alone,
 * so that the state that holds them is not also below them.
 */
export interface MemoryRuns {
  readonly runs: ReadonlyMap<string, MemoryRun>;
  readonly clock: MemoryClock;
  readonly wakeups: MemoryWakeups;
  queue(name: string): MemoryQueue;
}
