import { RedisOutOfMemoryError, TaskInspector, TaskResultNotFoundError, TaskStatus } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

/** Payloads of about 2 KB: a 20 MB Redis fills within a few thousand runs. */
const FILLER = 'x'.repeat(2_000);
const BATCH = 200;

/**
 * A full Redis (`maxmemory` reached, `noeviction`): an enqueue fails with a
 * typed error that says so, stores nothing of its call, loses nothing stored
 * before, and enqueues succeed again once memory is freed.
 */
describe('a Redis out of memory', () => {
  let server: RedisServer;
  let app: Harness;
  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', '20mb'] });
    app = await Harness.start({ options: { connection: server.url } });
  });
  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  it('refuses enqueues with RedisOutOfMemoryError, stores nothing of them, and recovers after a purge', async () => {
    const kept = await app.queue.enqueueMany(
      Array.from({ length: 50 }, (_, i) => ({ task: EchoService, method: 'echo' as const, args: [i] })),
    );
    // Fill Redis with pending runs of another queue until it refuses.
    let batch = 0;
    let refusal: unknown;
    for (; batch < 1_000 && refusal === undefined; batch++) {
      const items = Array.from({ length: BATCH }, (_, i) => ({
        task: 'EchoService.echo',
        args: [FILLER],
        queue: 'reports',
        id: `filler-${batch}-${i}`,
      }));
      refusal = await app.queue.enqueueMany(items).then(
        () => undefined,
        (error: unknown) => error,
      );
    }
    expect(refusal).toBeInstanceOf(RedisOutOfMemoryError);
    expect((refusal as Error).message).toMatch(/out of memory .*nothing of this call was stored/);
    const refused = batch - 1;

    // The refused call stored none of its runs; every run stored before is there.
    for (const i of [0, BATCH / 2, BATCH - 1]) {
      await expect(app.queue.getResult(`filler-${refused}-${i}`)).rejects.toBeInstanceOf(TaskResultNotFoundError);
    }
    const [reports, defaults] = await app.queue.counts(['reports', 'default']);
    expect(reports!.ready).toBe(refused * BATCH);
    expect(defaults!.ready).toBe(kept.length);
    // A single enqueue is refused the same way, once Redis is over its limit again (a refusal can leave it just below).
    let single: unknown;
    let singles = 0;
    for (; singles < 1_000 && single === undefined; singles++) {
      single = await app.queue.enqueue(EchoService, 'echo', [FILLER], { queue: 'reports' }).then(
        () => undefined,
        (error: unknown) => error,
      );
    }
    expect(single).toBeInstanceOf(RedisOutOfMemoryError);

    // An operator frees memory: enqueues succeed again, and nothing else was lost.
    expect(await app.module.get(TaskInspector).purge('reports')).toBe(refused * BATCH + singles - 1);
    const after = await app.queue.enqueue(EchoService, 'echo', ['after']);
    expect(after.status).toBe(TaskStatus.READY);
    const stored = await app.queue.getResults(kept.map((run) => run.id));
    expect(stored.map((run) => run?.status)).toEqual(kept.map(() => TaskStatus.READY));
    expect((await app.queue.counts(['default']))[0]!.ready).toBe(kept.length + 1);
  });
});
