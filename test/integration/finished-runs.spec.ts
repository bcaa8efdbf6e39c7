import { TaskResultNotFoundError } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeasedRun, Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { Harness } from '../support/harness.js';

const RESULT_TTL_MS = 300;
const ERROR = { errorClass: 'Error', message: 'no', stack: 'Error: no', attempt: 1 };

/**
 * A finished run is kept `resultTtlMs` and then removed with its entry in its
 * queue's finished index, never one without the other: counts are the
 * indexes' sizes, exact in a queue that has gone quiet too.
 */
describe('finished runs', () => {
  let app: Harness;
  afterEach(async () => {
    await app.close();
  });

  async function finish(queue: string, count: number, outcome: Outcome): Promise<string[]> {
    const runs = await app.queue.enqueueMany(
      Array.from({ length: count }, (_, i) => ({ task: 'MathService.add', args: [i, 1], queue })),
    );
    const leased: LeasedRun[] = await app.backend.claim([queue], count, 'host:1:0', 0);
    expect(await app.backend.acknowledge(leased.map((run) => ({ ...run, outcome })))).toEqual(leased.map(() => true));
    return runs.map((run) => run.id);
  }
  const counts = async (queue: string) => (await app.queue.counts([queue]))[0]!;
  const runKeys = async () => app.backend.connections.client.keys(`${app.backend.keys.runPrefix}*`);

  it('leaves a quiet queue with its index entry once its result expires, at the next broker pass', async () => {
    app = await Harness.start({ options: { resultTtlMs: RESULT_TTL_MS } });
    const broker = new Broker(app.backend, new TaskExecutor(app.module.get(TaskRegistry)), {
      queues: ['reports'],
      intervalMs: 1_000,
      claimTtlMs: 5_000,
      maxRecoveries: 3,
    });
    const succeeded = await finish('reports', 3, { kind: 'successful', returnValue: '1' });
    const failed = await finish('reports', 2, { kind: 'failed', error: ERROR });
    expect(await counts('reports')).toMatchObject({ successful: 3, failed: 2 });
    expect(await broker.pass()).toBeLessThanOrEqual(RESULT_TTL_MS);
    await delay(RESULT_TTL_MS + 50);
    await broker.pass();
    expect(await counts('reports')).toMatchObject({ successful: 0, failed: 0 });
    for (const id of [...succeeded, ...failed]) {
      await expect(app.queue.getResult(id)).rejects.toBeInstanceOf(TaskResultNotFoundError);
    }
    expect(await runKeys()).toEqual([]);
  });

  it("trims its queue's expired results as it acknowledges, without a broker", async () => {
    app = await Harness.start({ options: { resultTtlMs: RESULT_TTL_MS } });
    const old = await finish('emails', 4, { kind: 'successful', returnValue: '1' });
    await delay(RESULT_TTL_MS + 50);
    const fresh = await finish('emails', 1, { kind: 'successful', returnValue: '2' });
    expect(await counts('emails')).toMatchObject({ successful: 1 });
    await expect(app.queue.getResult(old[0]!)).rejects.toBeInstanceOf(TaskResultNotFoundError);
    expect((await app.queue.getResult(fresh[0]!)).returnValue).toBe(2);
  });

  it('removes more expired results than one pass takes, pass after pass without a pause', async () => {
    app = await Harness.start({ options: { resultTtlMs: RESULT_TTL_MS, batchSize: 100 } });
    const broker = new Broker(app.backend, new TaskExecutor(app.module.get(TaskRegistry)), {
      queues: ['default'],
      intervalMs: 1_000,
      claimTtlMs: 5_000,
      maxRecoveries: 3,
    });
    for (let i = 0; i < 3; i++) await finish('default', 100, { kind: 'successful', returnValue: '1' });
    await delay(RESULT_TTL_MS + 50);
    // Each pass removes a batch per index, and plans the next at once while expired results remain.
    expect(await broker.pass()).toBeLessThanOrEqual(1);
    expect(await counts('default')).toMatchObject({ successful: 200 });
    await broker.pass();
    await broker.pass();
    expect(await counts('default')).toMatchObject({ successful: 0 });
    expect(await runKeys()).toEqual([]);
  });
});
