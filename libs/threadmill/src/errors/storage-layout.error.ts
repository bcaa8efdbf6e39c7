import { ThreadmillError } from './threadmill.error.js';

/**
 * The backend's keys use a storage layout newer than this version of
 * Threadmill understands (a newer version upgraded them); the boot fails
 * rather than misread what it stored.
 */
export class StorageLayoutError extends ThreadmillError {
  constructor(
    readonly where: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `The Threadmill keys at ${where} use storage layout ${found}, written by a newer version of ` +
        `@threadmill/nestjs; this version reads layout ${supported} and older. Upgrade @threadmill/nestjs in this ` +
        'application (every producer and worker of a backend must run a version that reads its layout).',
    );
  }
}
