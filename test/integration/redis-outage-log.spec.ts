import { Test } from '@nestjs/testing';
import { TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { RedisServer } from '@threadmill/nestjs/testing';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES, FixtureTasksModule, MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { waitUntil } from '../support/wait.js';

const LOST = /^Lost the connection to Redis at 127\.0\.0\.1:\d+\/0\b.*; reconnecting\./;
const BACK = /^Reconnected to Redis at 127\.0\.0\.1:\d+\/0 after (\d+\.\d) s \(lost at \S+Z\b/;

describe('the log of a Redis outage', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('says once that the connection is lost and once that it is back, with how long it was away', async () => {
    // Restarted from its AOF after each crash, with every write it confirmed.
    const redis = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
    cleanup.push(() => redis.stop());
    const logger = new CapturedLogger();
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redis.url, alias: uniqueAlias(), queues: FIXTURE_QUEUES }),
        FixtureTasksModule,
      ],
    }).compile();
    module.useLogger(logger);
    // A worker too: its blocking connections are lost and come back with the command connection.
    const app = module.createNestMicroservice({ strategy: new ThreadmillServer({ concurrency: 2 }), logger });
    await app.listen();
    cleanup.push(() => app.close());
    const queue = module.get(TaskQueue);
    const lines = (pattern: RegExp) => logger.lines.filter((line) => pattern.test(line.message));

    for (let outage = 1; outage <= 2; outage++) {
      await redis.kill('SIGKILL');
      await waitUntil('the loss is logged', () => lines(LOST).length === outage);
      const lostSeen = Date.now();
      // Away long enough for every connection to fail a few retries (about one a second at most).
      await delay(1_500);
      const restarting = Date.now();
      await redis.restart();
      await waitUntil('the reconnection is logged', () => lines(BACK).length === outage);

      // Every connection lost is back: the worker runs what is enqueued now.
      const { id } = await queue.enqueue(MathService, 'add', [outage, 1]);
      expect((await queue.waitFor(id, { timeoutMs: 10_000 })).returnValue).toBe(outage + 1);
      expect(lines(LOST).map((line) => line.level)).toEqual(Array(outage).fill('warn'));
      expect(lines(BACK).map((line) => line.level)).toEqual(Array(outage).fill('log'));
      // The outage it reports began before the loss was seen and ended after the restart began (0.1 s rounding).
      const seconds = Number(BACK.exec(lines(BACK)[outage - 1]!.message)![1]);
      expect(seconds * 1000 + 50).toBeGreaterThanOrEqual(restarting - lostSeen);
    }
    // The retries in between are not logged one by one.
    expect(lines(/Redis connection error/)).toEqual([]);
  });
});
