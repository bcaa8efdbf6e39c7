import { ThreadmillError } from './threadmill.error.js';

/**
 * The options given to `ThreadmillModule.forRoot` / `forRootAsync` are invalid.
 * The message names every bad field on its own line: the field, the value
 * that was given and the rule it breaks.
 */
export class ThreadmillConfigError extends ThreadmillError {
  constructor(readonly problems: readonly string[]) {
    super(
      `Invalid Threadmill options (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((line) => `  - ${line}`).join('\n') +
        '\nFix these fields in ThreadmillModule.forRoot() / forRootAsync().',
    );
  }
}
