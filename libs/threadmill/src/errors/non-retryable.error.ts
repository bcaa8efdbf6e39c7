import { ThreadmillError } from './threadmill.error.js';

/**
 * Throw it from a task to fail its run at once, without asking the retry
 * policy: retrying cannot help (a declined card, a deleted account). Pass the
 * underlying error as `cause` to keep it in the stack.
 */
export class NonRetryableError extends ThreadmillError {}
