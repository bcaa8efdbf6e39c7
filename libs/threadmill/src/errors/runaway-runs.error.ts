import { ThreadmillError } from './threadmill.error.js';

/**
 * The testing module ran more attempts in one go than its bound allows:
 * runs that keep enqueueing runs (or retry forever) would never end.
 */
export class RunawayRunsError extends ThreadmillError {
  constructor(
    readonly maxRuns: number,
    readonly lastTask: string | undefined,
  ) {
    super(
      `ThreadmillTestingModule ran ${maxRuns} attempts in one go without running out of ready runs` +
        `${lastTask ? ` (the last one was ${lastTask})` : ''}: runs that enqueue runs (or retry) without end? ` +
        'Fix the loop, or raise ThreadmillTestingModule.forRoot({ maxRuns }) if the test really needs more.',
    );
  }
}
