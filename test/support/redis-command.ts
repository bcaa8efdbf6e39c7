import type { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

/** Runs one command on `server` (a Redis server or a sentinel), on a connection of its own, tried once. */
export async function command(server: Pick<RedisServer, 'url'>, ...args: string[]): Promise<unknown> {
  const client = new Redis(server.url, { lazyConnect: true, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}
