/**
 * Test helpers: a throwaway `redis-server` for integration tests.
 * Import from `@threadmill/nestjs/testing`.
 */
export { RedisServer, freePort, redisServerAvailable, type RedisServerOptions } from './redis-server.js';
