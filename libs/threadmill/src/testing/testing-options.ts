import type { ThreadmillModuleOptions } from '../options/threadmill-options.interface.js';

/**
 * How the testing module runs what is enqueued:
 * - `'immediate'`: each enqueue runs its run (and any run it enqueues) before it resolves;
 * - `'manual'`: runs are stored, and run only when the test says so (`ThreadmillTesting.runNext()`, `runAll()`).
 */
export type ThreadmillTestingMode = 'immediate' | 'manual';

/**
 * Options of `ThreadmillTestingModule.forRoot()`: those of
 * `ThreadmillModule.forRoot()` (so an app's own options can be passed
 * unchanged; `connection` is accepted and never used) and the testing ones.
 */
export interface ThreadmillTestingModuleOptions extends ThreadmillModuleOptions {
  /**
   * Run each enqueue at once, or only when the test says so.
   * @defaultValue `'immediate'`
   */
  mode?: ThreadmillTestingMode;
  /**
   * Most attempts one enqueue (immediate mode) or one `runAll()` runs before
   * it throws `RunawayRunsError`: a bound against runs that enqueue runs
   * without end.
   * @defaultValue `1000`
   */
  maxRuns?: number;
}

/** The testing options, validated. */
export interface ThreadmillTestingSettings {
  readonly mode: ThreadmillTestingMode;
  readonly maxRuns: number;
}
