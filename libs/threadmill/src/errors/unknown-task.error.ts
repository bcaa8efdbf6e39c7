import { ThreadmillError } from './threadmill.error.js';

/** Enqueue named a task (or class method) that no `@Task()` declares in this application. */
export class UnknownTaskError extends ThreadmillError {
  constructor(
    readonly task: string,
    known: readonly string[],
  ) {
    const hint = known.length
      ? `Known tasks: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''}.`
      : 'No task is registered: is the module that provides it imported?';
    super(
      `Unknown task "${task}". ${hint} Decorate the method with @Task() and make sure its ` +
        `provider's module is imported by this application.`,
    );
  }
}
