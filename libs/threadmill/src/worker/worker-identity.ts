import { hostname } from 'node:os';

/**
 * The identity of a worker process, `host:pid:slot`, recorded in each run's
 * `workerIds`. Commas are replaced because stored worker id lists are
 * comma-separated.
 */
export function workerIdentity(slot: number): string {
  return `${hostname().replace(/[,\s"\\]/g, '_')}:${process.pid}:${slot}`;
}
