/**
 * Test helpers. Import from `@threadmill/nestjs/testing`:
 * - `ThreadmillTestingModule`: `ThreadmillModule` over an in-memory backend,
 *   for testing an application's own code without Redis;
 * - `RedisServer`: a throwaway `redis-server` for tests against a real Redis.
 */
export { ThreadmillTestingModule, getThreadmillTestingToken } from './threadmill-testing.module.js';
export { ThreadmillTesting, type EnqueuedRun } from './threadmill-testing.js';
export type {
  ThreadmillTestingMode,
  ThreadmillTestingModuleOptions,
  ThreadmillTestingSettings,
} from './testing-options.js';
export { InMemoryTaskBackend } from './memory/in-memory.backend.js';
export type { MemoryBackendSettings } from './memory/memory-state.js';
export { MemoryClock } from './memory/memory-clock.js';
export { RunawayRunsError } from '../errors/runaway-runs.error.js';
export { RedisServer, freePort, redisServerAvailable, type RedisServerOptions } from './redis-server.js';
