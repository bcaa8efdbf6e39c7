import { ThreadmillError } from './threadmill.error.js';

/** A `@Task()` declaration is invalid (bad option, undeclared queue); the boot fails naming its site. */
export class InvalidTaskError extends ThreadmillError {
  constructor(
    readonly site: string,
    readonly problem: string,
  ) {
    super(`Invalid @Task() on ${site}: ${problem}`);
  }
}
