/**
 * Base class of every error Threadmill throws on purpose. Catch it to tell
 * Threadmill's own errors (bad options, bad input, unknown ids) from errors of
 * Redis or of your tasks.
 */
export class ThreadmillError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
