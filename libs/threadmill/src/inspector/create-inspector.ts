import { RedisConnections } from '../backend/redis/redis-connections.js';
import { observedBackend } from '../backend/partitioned/create-backend.js';
import type { TaskBackend } from '../backend/task-backend.js';
import type { RedisConnection, ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { validateOptions } from '../options/validate-options.js';
import type { ResultTtl } from '../records/result-ttl.js';
import { TaskInspector } from './task-inspector.js';

/** Where the backend to inspect is. */
export interface InspectorOptions {
  /** @defaultValue `'redis://localhost:6379'` */
  connection?: RedisConnection;
  /** @defaultValue `'default'` */
  alias?: string;
  /** @defaultValue `10000` */
  connectTimeoutMs?: number;
  /**
   * The applications' result TTL, which the capacity report projects kept
   * results with (an inspector cannot read it from Redis).
   * @defaultValue one day, the module's default
   */
  resultTtlMs?: ResultTtl;
  /** @defaultValue `0.8` */
  memoryWarningRatio?: number;
}

/** A standalone inspector and how to let go of its connection. */
export interface StandaloneInspector {
  readonly inspector: TaskInspector;
  /** Where it is connected, for display (passwords masked). */
  readonly describe: string;
  close(): Promise<void>;
}

/**
 * A {@link TaskInspector} without a Nest application, for terminal tools and
 * scripts: it sees every queue the backend's applications registered.
 * @throws ThreadmillConfigError for bad options, RedisUnavailableError when connecting to Redis fails
 *   (at once, or after `connectTimeoutMs` when it does not answer), StorageLayoutError when a newer
 *   version of Threadmill wrote the backend's keys
 */
export async function createInspector(options: InspectorOptions = {}): Promise<StandaloneInspector> {
  // The inspector declares no queues of its own: it lists those registered in Redis.
  const resolved: ThreadmillOptions = { ...validateOptions(options), queues: [] };
  const connections = new RedisConnections(resolved.connection, resolved.alias, resolved.connectTimeoutMs);
  try {
    // A tool's user is waiting: a refused connection fails now, not after the timeout.
    await connections.ready(true);
  } catch (error) {
    await connections.close();
    throw error;
  }
  let backend: TaskBackend;
  try {
    backend = await observedBackend(connections, resolved);
  } catch (error) {
    await connections.close();
    throw error;
  }
  return {
    inspector: new TaskInspector(backend, resolved),
    describe: connections.describe(),
    close: () => connections.close(),
  };
}
