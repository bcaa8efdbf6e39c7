import { ThreadmillError } from './threadmill.error.js';

/** Redis is configured in a way that would lose task runs; the boot fails. */
export class UnsafeRedisError extends ThreadmillError {}
