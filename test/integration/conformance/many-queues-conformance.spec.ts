import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

/** Polls `condition` every 10 ms until it holds, failing after 10 s. */
async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// A claim passes by the queues without ready runs cheaply (docs/storage.md,
// "Queues without ready runs"): these tests fail if it passes by one that has
// some, whichever path made them ready.
const QUEUES = Array.from({ length: 40 }, (_, i) => `many-${i}`);
const WORKER = 'host:1:0';
const ERROR = { errorClass: 'Error', message: 'again', stack: '', attempt: 1 };

describe.each(BACKENDS)('conformance: a claim of many queues on the $name backend', (backend) => {
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, ...QUEUES], leaseTtlMs: 300 });
  });
  afterEach(() => app.close());

  const enqueue = (queue: string, options: { delayMs?: number; priority?: number } = {}) =>
    app.queue.enqueue('MathService.add', [1, 2], { queue, partitionKey: 'many', ...options });
  /** Claims of all the queues, from every offset in turn, until one finds runs. */
  const claimAll = async (want = 10) => {
    for (let offset = 0; offset < QUEUES.length; offset++) {
      const runs = await app.backend.claim(QUEUES, want, WORKER, offset);
      if (runs.length > 0) return runs;
    }
    return [];
  };

  it('claims a run made ready by every path, in a queue among many empty ones', async () => {
    // Enqueued ready.
    const fresh = await enqueue('many-17');
    const [claimed] = await claimAll();
    expect(claimed?.id).toBe(fresh.id);
    const success = { kind: 'successful', returnValue: '3' } as const;
    expect(await app.backend.acknowledge([{ ...claimed!, outcome: success }])).toEqual([true]);
    // Deferred, then promoted.
    const deferred = await enqueue('many-33', { delayMs: 30 });
    expect(await claimAll()).toEqual([]);
    await until('the deferred run is promoted', async () => (await app.backend.promote(QUEUES)).promoted === 1);
    const [promoted] = await claimAll();
    expect(promoted?.id).toBe(deferred.id);
    // Retried at once.
    expect(
      await app.backend.acknowledge([{ ...promoted!, outcome: { kind: 'retry', error: ERROR, delayMs: 0 } }]),
    ).toEqual([true]);
    const [retried] = await claimAll();
    expect(retried).toMatchObject({ id: deferred.id, attempts: 2 });
    // Handed back unstarted.
    expect(await app.backend.release([retried!])).toEqual([true]);
    const [handedBack] = await claimAll();
    expect(handedBack?.id).toBe(deferred.id);
    // Quarantined, then requeued.
    const quarantine = { kind: 'quarantine', reason: 'invalid-arguments', message: 'm' } as const;
    expect(await app.backend.acknowledge([{ ...handedBack!, outcome: quarantine }])).toEqual([true]);
    expect(await claimAll()).toEqual([]);
    expect((await app.backend.requeue(deferred.id, 'many-33')).requeued).toBe(true);
    const [requeued] = await claimAll();
    expect(requeued?.id).toBe(deferred.id);
    // Its lease expired unstarted: reaped back to READY.
    await until(
      'the lease expires and is reaped',
      async () => (await app.backend.reap(QUEUES, 5_000, 3)).returned === 1,
    );
    expect((await claimAll()).map((r) => r.id)).toEqual([deferred.id]);
    // Paused, enqueued, resumed.
    await app.backend.pause('many-5');
    const paused = await enqueue('many-5');
    expect(await claimAll()).toEqual([]);
    await app.backend.resume('many-5');
    expect((await claimAll()).map((r) => r.id)).toEqual([paused.id]);
  });

  it('claims every run of queues filled unevenly, each once, in each queue’s order, each claim going on where the last stopped', async () => {
    const expected = new Map<string, string[]>();
    for (let i = 0; i < QUEUES.length; i += 3) {
      const queue = QUEUES[i]!;
      const ids: string[] = [];
      // Every third queue: i % 4 + 1 runs, the last of a higher priority (first in the queue's order).
      for (let j = 0; j < (i % 4) + 1; j++) ids.push((await enqueue(queue)).id);
      const urgent = await enqueue(queue, { priority: 5 });
      expected.set(queue, [urgent.id, ...ids]);
    }
    // A claim of 14 among 14 queues with runs (2 to 5 each): a queue's share
    // is at least CLAIM_MIN_SHARE runs, so each queue it reaches from its
    // offset on gives all it has (3, 2, 5 and 4 runs make the 14).
    const first = await app.backend.claim(QUEUES, 14, WORKER, 7);
    expect([...new Set(first.map((r) => r.queue))]).toEqual(['many-9', 'many-12', 'many-15', 'many-18']);
    const claimed = [...first];
    for (let offset = first.next, got = first.length; got > 0;) {
      const runs = await app.backend.claim(QUEUES, 5, WORKER, offset);
      got = runs.length;
      offset = runs.next;
      claimed.push(...runs);
    }
    const byQueue = new Map<string, string[]>();
    for (const run of claimed) byQueue.set(run.queue, [...(byQueue.get(run.queue) ?? []), run.id]);
    expect(byQueue).toEqual(expected);
  });
});
