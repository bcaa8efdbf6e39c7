import { RedisServer, redisServerAvailable } from '@threadmill/nestjs/testing';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/**
 * One throwaway redis-server (free port, fresh directory) for the whole run;
 * every test isolates itself with its own backend alias, hence its own keys.
 * Tests that break Redis on purpose start their own server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!redisServerAvailable()) {
    throw new Error('redis-server is not on PATH: install it (apt-get install -y redis-server) to run the tests.');
  }
  const server = await RedisServer.start({ appendonly: true });
  project.provide('redisUrl', server.url);
  return () => server.stop();
}
