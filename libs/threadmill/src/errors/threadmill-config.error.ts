import { ThreadmillError } from './threadmill.error.js';

/**
 * The options given to `ThreadmillModule.forRoot` / `forRootAsync` (or to
 * another Threadmill module, named by `site`) are invalid. The message names
 * every bad field on its own line: the field, the value that was given and
 * the rule it breaks.
 */
export class ThreadmillConfigError extends ThreadmillError {
  constructor(
    readonly problems: readonly string[],
    site = 'ThreadmillModule.forRoot() / forRootAsync()',
  ) {
    super(
      `Invalid Threadmill options (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((line) => `  - ${line}`).join('\n') +
        `\nFix these fields in ${site}.`,
    );
  }
}
