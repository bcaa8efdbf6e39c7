import { ThreadmillError } from './threadmill.error.js';

/**
 * Redis refused a write because its memory is full (`used_memory` over
 * `maxmemory`, with the `noeviction` policy Threadmill requires). The call
 * stored nothing: a script's first write is the one Redis refuses, before
 * anything of the call is written. Runs stored before are kept.
 */
export class RedisOutOfMemoryError extends ThreadmillError {
  constructor(
    readonly where: string,
    cause: unknown,
  ) {
    super(
      `Redis at ${where} is out of memory (used_memory over maxmemory) and refused the write: nothing of this call was ` +
        'stored, and runs stored before are kept. Free memory and retry: finished runs leave when their result TTL ' +
        'passes (lower resultTtlMs to keep fewer), an operator can purge a queue, or raise maxmemory.',
      { cause },
    );
  }
}

/** Whether `error` is Redis refusing a command for lack of memory (`-OOM`, also from inside a script). */
export function isOutOfMemory(error: unknown): boolean {
  return error instanceof Error && /(^|\s)OOM command not allowed/.test(error.message);
}
