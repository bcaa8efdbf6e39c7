import type { ThreadmillModuleOptions } from '@threadmill/nestjs';
import { DEMO_QUEUES } from './demo-queues.js';

/** The demo backend's options, from the environment both demo apps share. */
export function demoBackendOptions(): ThreadmillModuleOptions {
  return {
    connection: process.env['REDIS_URL'] ?? 'redis://localhost:6379',
    alias: process.env['THREADMILL_ALIAS'] ?? 'default',
    queues: DEMO_QUEUES,
  };
}
