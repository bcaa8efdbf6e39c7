import { maskUrl } from '@threadmill/nestjs';
import { RedisServer, redisServerAvailable } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

/** The Redis the demo uses, and how to let go of it. */
export interface LocatedRedis {
  readonly url: string;
  readonly origin: string;
  /** Removes the demo's keys from a shared Redis, or stops a throwaway one. */
  release(alias: string): Promise<void>;
}

/** Deletes every key of backend `alias`, so a demo leaves a shared Redis as it found it. */
async function removeKeys(url: string, alias: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const stream = client.scanStream({ match: `threadmill:{${alias}}:*`, count: 1_000 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length > 0) await client.unlink(...keys);
    }
  } finally {
    client.disconnect();
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * `REDIS_URL` if set, else localhost:6379 if it answers, else a throwaway
 * `redis-server` from PATH (removed afterwards). Returns null when none works.
 */
export async function locateRedis(): Promise<LocatedRedis | null> {
  const fromEnv = process.env['REDIS_URL'];
  if (fromEnv) {
    if (!(await answers(fromEnv))) return null;
    return { url: fromEnv, origin: `REDIS_URL (${maskUrl(fromEnv)})`, release: (alias) => removeKeys(fromEnv, alias) };
  }
  const local = 'redis://127.0.0.1:6379';
  if (await answers(local))
    return { url: local, origin: 'localhost:6379', release: (alias) => removeKeys(local, alias) };
  if (!redisServerAvailable()) return null;
  const server = await RedisServer.start({ appendonly: true, args: ['--maxmemory', '1gb'] });
  return { url: server.url, origin: `a throwaway redis-server on port ${server.port}`, release: () => server.stop() };
}
