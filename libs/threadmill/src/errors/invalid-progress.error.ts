import { ThreadmillError } from './threadmill.error.js';

/**
 * `context.progress(value)` got a value it cannot store: not JSON-serializable
 * (undefined, a function, a BigInt, a cycle) or too large. Nothing was
 * stored; the attempt goes on.
 */
export class InvalidProgressError extends ThreadmillError {
  constructor(
    readonly runId: string,
    readonly task: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(
      `context.progress() of run ${runId} (${task}) refused the value: ${problem}. Report a small JSON value ` +
        '(a percentage, counts, a stage name); keep bulky data in the return value or your own store.',
      options,
    );
  }
}
