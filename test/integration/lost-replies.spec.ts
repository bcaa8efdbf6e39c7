import { TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MathService } from '../fixtures/fixture-tasks.js';
import { redisUrl } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { ReplyDropProxy } from '../support/reply-drop-proxy.js';

/**
 * The connection drops after Redis ran an enqueue and before its reply came
 * back. ioredis then resends the command on reconnect, so Redis runs it twice:
 * each run must still be stored once (one ready entry, counted once) and the
 * caller must get its runs as created.
 */
describe('an enqueue whose reply is lost', () => {
  let proxy: ReplyDropProxy;
  let app: Harness;
  beforeAll(async () => {
    proxy = await ReplyDropProxy.start(redisUrl());
    app = await Harness.start({ options: { connection: proxy.url } });
    // Load the scripts, so that the armed request is the script call itself.
    await app.queue.enqueue(MathService, 'add', [0, 0]);
  });
  afterAll(async () => {
    await app.close();
    await proxy.stop();
  });
  beforeEach(async () => {
    await app.backend.purge('default');
  });

  /** Leases everything ready on `default`: the ids a worker would run, in order, repeats included. */
  async function claimAll(): Promise<string[]> {
    const ids: string[] = [];
    for (;;) {
      const batch = await app.backend.claim(['default'], 500, 'lost-replies:1:0', 0);
      if (batch.length === 0) return ids;
      ids.push(...batch.map((run) => run.id));
    }
  }

  async function enqueuedCount(): Promise<number> {
    return (await app.backend.stats('default')).enqueued ?? 0;
  }

  it('stores a single run once', async () => {
    const before = await enqueuedCount();
    proxy.dropNextReplyTo('evalsha');
    const run = await app.queue.enqueue(MathService, 'add', [1, 2]);
    expect(proxy.dropped).toBe(1);
    expect(run.status).toBe(TaskStatus.READY);
    expect(await enqueuedCount()).toBe(before + 1);
    expect(await claimAll()).toEqual([run.id]);
  });

  it('stores every run of a bulk call once, in order', async () => {
    const before = await enqueuedCount();
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo('evalsha');
    const runs = await app.queue.enqueueMany(
      Array.from({ length: 300 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    expect(proxy.dropped).toBe(dropped + 1);
    expect(runs.every((run) => run.status === TaskStatus.READY)).toBe(true);
    expect(await enqueuedCount()).toBe(before + 300);
    expect(await claimAll()).toEqual(runs.map((run) => run.id));
  });

  it('stores a caller-chosen id once and returns it as stored', async () => {
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo('evalsha');
    const id = `order-${Date.now()}`;
    const run = await app.queue.enqueue(MathService, 'add', [3, 4], { id });
    expect(proxy.dropped).toBe(dropped + 1);
    expect(run).toMatchObject({ id, status: TaskStatus.READY, args: [3, 4] });
    expect(await claimAll()).toEqual([id]);
  });
});
