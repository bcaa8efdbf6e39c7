import { ThreadmillError } from './threadmill.error.js';

/**
 * A value cannot be stored as JSON without changing meaning: a function, a
 * BigInt, a cycle, `undefined` inside an array, a Map, NaN... The message gives
 * the path of the offending value.
 */
export class PayloadSerializationError extends ThreadmillError {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path} ${problem}`);
  }
}
