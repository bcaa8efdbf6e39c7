import type { WorkerRuntime } from '../worker/worker.js';
import type { ThreadmillServerOptions } from './threadmill-server.options.js';

/**
 * What the application's `ThreadmillModule` gives a `ThreadmillServer`: its
 * backend, tasks (its handlers registered at discovery), events and options,
 * and the moment the application is ready to consume.
 */
export interface ServerBinding {
  readonly runtime: WorkerRuntime;
  /** The application's worker settings (`ThreadmillWorkerModule`), beneath the server's own options. */
  readonly workerOptions: ThreadmillServerOptions | undefined;
  /**
   * Runs `start` once every module of the application is initialised (Redis
   * connected, tasks registered): at once when it is, else at the
   * application's bootstrap, whose failure `start`'s error then becomes.
   * @returns whether `start` ran now
   */
  whenReady(start: () => void): boolean;
}
