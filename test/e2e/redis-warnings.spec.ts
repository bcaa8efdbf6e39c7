import { RedisServer } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { WorkerProcess, type FixtureApp } from '../support/worker-process.js';

/** How many times `pattern` occurs in `text`. */
const occurrences = (text: string, pattern: RegExp) => text.match(new RegExp(pattern, 'g'))?.length ?? 0;

const AOF_OFF = /has AOF off \(appendonly no\)/;
const NO_MAXMEMORY = /has no maxmemory/;
const CLIENT_CONNECTED = /ThreadmillClient connected in pid \d+/;

describe('Redis safety warnings (real processes)', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A Redis with AOF off and no maxmemory (both warned about), a producer on it, and `runs` runs enqueued. */
  async function setup(runs: number) {
    const redis = await RedisServer.start({ appendonly: false });
    cleanup.push(() => redis.stop());
    const alias = uniqueAlias('warn');
    const app = await Harness.start({ options: { connection: redis.url, alias } });
    cleanup.push(() => app.close());
    await app.queue.enqueueMany(Array.from({ length: runs }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    return { redis, alias };
  }

  function start(redis: RedisServer, alias: string, args: string[], app: FixtureApp): WorkerProcess {
    const worker = WorkerProcess.start(alias, args, { REDIS_URL: redis.url, FIXTURE_CLIENT: '1' }, false, app);
    cleanup.push(() => worker.stop());
    return worker;
  }

  it('are logged once by a pool: not again by its processes, recycled ones, or the ThreadmillClient of each', async () => {
    // 20 runs, at most 5 per process: at least 4 processes, so at least 2 recycles.
    const { redis, alias } = await setup(20);
    const pool = start(
      redis,
      alias,
      ['--workers', '2', '--concurrency', '2', '--max-tasks', '5', '--exit-empty'],
      'worker-main',
    );
    expect((await pool.waitForExit(60_000)).code, pool.log).toBe(0);
    // The supervisor and every member connected a backend and a client: at least one member was recycled.
    expect(pool.log).toMatch(/Recycling worker slot \d \(pid \d+\): it reached --max-tasks/);
    expect(occurrences(pool.log, CLIENT_CONNECTED)).toBeGreaterThanOrEqual(4);
    expect(occurrences(pool.log, AOF_OFF), pool.log).toBe(1);
    expect(occurrences(pool.log, NO_MAXMEMORY), pool.log).toBe(1);
  });

  it('are logged once by a standalone worker whose application also holds a ThreadmillClient', async () => {
    const { redis, alias } = await setup(0);
    const worker = start(redis, alias, [], 'microservice-main');
    // Both connected at boot, before the microservice listens.
    await worker.waitForOutput(/microservice listening/);
    expect(occurrences(worker.log, CLIENT_CONNECTED)).toBe(1);
    expect(occurrences(worker.log, AOF_OFF), worker.log).toBe(1);
    expect(occurrences(worker.log, NO_MAXMEMORY), worker.log).toBe(1);
  });
});
