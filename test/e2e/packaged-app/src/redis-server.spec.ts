// RedisServer from the tarball: a throwaway redis-server of the test's own.
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

describe('RedisServer', () => {
  it('starts a redis-server that answers', async () => {
    const server = await RedisServer.start();
    const client = new Redis(server.url);
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
