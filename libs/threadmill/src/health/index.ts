/**
 * `@nestjs/terminus` health indicators for Threadmill
 * (`@threadmill/nestjs/health`; needs `@nestjs/terminus`).
 */
export { ThreadmillHealthModule } from './threadmill-health.module.js';
export {
  ThreadmillHealthIndicator,
  type QueueAgeCheckOptions,
  type RedisCheckOptions,
  type WorkersCheckOptions,
} from './threadmill-health.indicator.js';
