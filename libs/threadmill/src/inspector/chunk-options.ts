import { MAX_CHUNK_SIZE, type PurgeOptions, type RequeueAllOptions } from '../records/backend-records.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';

/**
 * Refuses the options of an action in chunks (`purge`, `requeueAll`) that it
 * does not know, or of the wrong kind, or out of range, naming each.
 */
export function checkChunkOptions(action: 'purge' | 'requeueAll', options: PurgeOptions | RequeueAllOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidInspectionError(`${action} options must be an object, got ${String(options)}.`);
  }
  const problems: string[] = [];
  for (const key of Object.keys(options)) {
    if (key !== 'onProgress' && key !== 'chunkSize')
      problems.push(`unknown option "${key}" (the options are onProgress, chunkSize)`);
  }
  const { onProgress, chunkSize } = options;
  if (onProgress !== undefined && typeof onProgress !== 'function') problems.push('onProgress must be a function');
  if (chunkSize !== undefined && (!Number.isSafeInteger(chunkSize) || chunkSize < 1 || chunkSize > MAX_CHUNK_SIZE)) {
    problems.push(`chunkSize must be an integer from 1 to ${MAX_CHUNK_SIZE}, got ${String(chunkSize)}`);
  }
  if (problems.length > 0) throw new InvalidInspectionError(`Invalid ${action} options: ${problems.join('; ')}.`);
}
