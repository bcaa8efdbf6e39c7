import type { PurgeOptions } from '../backend/task-backend.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';

/** Refuses purge options it does not know, or of the wrong kind, naming each. */
export function checkPurgeOptions(options: PurgeOptions): void {
  const problems: string[] = [];
  if (typeof options !== 'object' || options === null) {
    throw new InvalidInspectionError(`purge options must be an object, got ${String(options)}.`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'onProgress' && key !== 'chunkSize')
      problems.push(`unknown option "${key}" (the options are onProgress, chunkSize)`);
  }
  const { onProgress, chunkSize } = options;
  if (onProgress !== undefined && typeof onProgress !== 'function') problems.push('onProgress must be a function');
  if (chunkSize !== undefined && (!Number.isSafeInteger(chunkSize) || chunkSize < 1)) {
    problems.push(`chunkSize must be a positive integer, got ${String(chunkSize)}`);
  }
  if (problems.length > 0) throw new InvalidInspectionError(`Invalid purge options: ${problems.join('; ')}.`);
}
