import { RedisServer, redisServerAvailable } from '@threadmill/nestjs/testing';
import type { TestProject } from 'vitest/node';
import { RedisCluster } from './redis-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    redisClusterPorts: number[];
  }
}

/**
 * One throwaway redis-server (free port, fresh directory) for the whole run,
 * and one Redis Cluster of three masters (the conformance suite runs on it
 * too); every test isolates itself with its own backend alias, hence its own
 * keys. Tests that break Redis on purpose start their own servers.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!redisServerAvailable()) {
    throw new Error('redis-server is not on PATH: install it (apt-get install -y redis-server) to run the tests.');
  }
  const [server, cluster] = await Promise.all([RedisServer.start({ appendonly: true }), RedisCluster.start(3)]);
  project.provide('redisUrl', server.url);
  project.provide(
    'redisClusterPorts',
    cluster.nodes.map((node) => node.port),
  );
  return async () => {
    await Promise.all([server.stop(), cluster.stop()]);
  };
}
