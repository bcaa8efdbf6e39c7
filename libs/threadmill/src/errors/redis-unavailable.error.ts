import { ThreadmillError } from './threadmill.error.js';

/** Redis could not be reached (at boot, or within an operation's bounded wait). */
export class RedisUnavailableError extends ThreadmillError {
  constructor(
    readonly where: string,
    cause: unknown,
    advice = 'Start Redis (e.g. `docker compose up -d redis`) or fix the `connection` option.',
  ) {
    super(`Cannot reach Redis at ${where}: ${cause instanceof Error ? cause.message : String(cause)}. ${advice}`, {
      cause,
    });
  }
}
