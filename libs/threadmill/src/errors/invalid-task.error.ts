import { ThreadmillError } from './threadmill.error.js';

/**
 * A task declaration is invalid (bad option, undeclared queue, a task that
 * disagrees with its contract): the boot fails naming its site.
 */
export class InvalidTaskError extends ThreadmillError {
  constructor(
    readonly site: string,
    readonly problem: string,
    /** What declares the task: `@Task()`, `@EventPattern()`, `defineTask()`. */
    readonly declaration = '@Task()',
  ) {
    super(`Invalid ${declaration} on ${site}: ${problem}`);
  }
}
