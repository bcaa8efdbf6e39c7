import { ThreadmillError } from './threadmill.error.js';

/** `waitFor` was called with a bad id or option, or after the application shut down; nothing was registered. */
export class InvalidWaitError extends ThreadmillError {
  constructor(
    readonly id: string,
    readonly problem: string,
  ) {
    super(`Cannot wait for run ${id}: ${problem}`);
  }
}
