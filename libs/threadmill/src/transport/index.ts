/**
 * Threadmill as a Nest microservice transport: `ThreadmillServer` serves
 * `@Task()` methods and `@EventPattern` / `@MessagePattern` handlers from
 * the queues of the application's `ThreadmillModule`, and producers talk to
 * it through `TaskQueue` or a Nest `ClientProxy`.
 */
export { ThreadmillServer, type ThreadmillServerStatus } from './threadmill-server.js';
export type { ThreadmillServerOptions } from './threadmill-server.options.js';
export {
  ThreadmillWorkerModule,
  THREADMILL_WORKER_OPTIONS,
  type ThreadmillWorkerModuleAsyncOptions,
} from './threadmill-worker.module.js';
export { ThreadmillContext } from './threadmill-context.js';
export { THREADMILL_TRANSPORT } from './threadmill-transport.js';
export { isRefusal } from './refusal.js';
export { ThreadmillClient, type ThreadmillClientOptions, type ThreadmillClientStatus } from './threadmill-client.js';
export { ThreadmillRecord } from './threadmill-record.js';
