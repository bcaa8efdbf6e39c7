import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLAIM_MIN_SHARE } from '../../../libs/threadmill/src/backend/claim-rotation.js';
import type { ClaimedRuns } from '../../../libs/threadmill/src/backend/task-backend.js';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

// The fairness rule of a claim (docs/storage.md, "Fairness"): each queue a
// claim serves gets a share of at least CLAIM_MIN_SHARE runs, and the next
// claim starts where the last one stopped.
const QUEUES = Array.from({ length: 100 }, (_, i) => `fair-${i}`);
const WORKER = 'host:1:0';

/** The queues a claim served, in its order. */
const servedBy = (runs: ClaimedRuns): string[] => [...new Set(runs.map((run) => run.queue))];

describe.each(BACKENDS)('conformance: fairness of claims on the $name backend', (backend) => {
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, ...QUEUES], leaseTtlMs: 60_000 });
  });
  afterEach(() => app.close());

  /** Enqueues `count` runs into each of `queues`, all in one partition (their order is the claims' to keep). */
  const fill = (queues: readonly string[], count: number) =>
    app.queue.enqueueMany(
      queues.flatMap((queue) =>
        Array.from({ length: count }, () => ({ task: 'MathService.add', args: [1, 2], queue, partitionKey: 'fair' })),
      ),
    );

  it('serves at most want / CLAIM_MIN_SHARE queues a claim, and every filled queue within as many claims as that takes', async () => {
    // Enough that the claims that come round again still find whole shares.
    await fill(QUEUES, 2 * CLAIM_MIN_SHARE);
    const perClaim = Math.ceil(250 / CLAIM_MIN_SHARE);
    const served = new Set<string>();
    let offset = 0;
    for (let claim = 0; claim < Math.ceil(QUEUES.length / perClaim); claim++) {
      const runs = await app.backend.claim(QUEUES, 250, WORKER, offset);
      expect(runs).toHaveLength(250);
      const queues = servedBy(runs);
      expect(queues.length).toBeLessThanOrEqual(perClaim);
      // Every queue but the last it served gave a whole share.
      for (const queue of queues.slice(0, -1)) {
        expect(runs.filter((run) => run.queue === queue)).toHaveLength(CLAIM_MIN_SHARE);
      }
      for (const queue of queues) served.add(queue);
      offset = runs.next;
    }
    expect(served.size).toBe(QUEUES.length);
  });

  it('serves two queues with runs among many in turn, one a claim, when claims are small', async () => {
    const [first, second] = [QUEUES[50]!, QUEUES[51]!];
    await fill([first, second], 30);
    const order: string[] = [];
    let offset = 0;
    for (let claim = 0; claim < 6; claim++) {
      const runs = await app.backend.claim(QUEUES, 10, WORKER, offset);
      expect(runs).toHaveLength(10);
      order.push(...servedBy(runs));
      offset = runs.next;
    }
    expect(order).toEqual([first, second, first, second, first, second]);
  });

  // A partitioned backend splits a cap and a rate over its partitions
  // (test/integration/partitions.spec.ts): there a paused queue is the one
  // held back whole.
  const partitioned = backend.name === 'redis-cluster-partitioned';
  it(`gives ${partitioned ? 'a paused queue' : 'a paused, a capped and a rate-limited queue'} held back no part: the others share the claim equally`, async () => {
    const named = QUEUES.slice(0, 6);
    const [paused, capped, limited] = named as [string, string, string];
    await fill(named, 100);
    await app.inspector.pause(paused);
    const limitedToOne = partitioned ? [] : [capped, limited];
    if (!partitioned) {
      await app.inspector.setConcurrencyCap(capped, 1);
      await app.inspector.setRateLimit(limited, { max: 1, perMs: 60_000, startSlackMs: 1_000 });
    }
    // The capped queue at its cap, the limited one at its rate.
    const leased: number[] = [];
    for (const queue of limitedToOne) leased.push((await app.backend.claim([queue], 5, WORKER, 0)).length);
    expect(leased).toEqual(limitedToOne.map(() => 1));
    const held = [paused, ...limitedToOne];
    const open = named.filter((queue) => !held.includes(queue));
    // The open queues take part: an equal share each (above CLAIM_MIN_SHARE), as if the others were not named.
    const want = open.length * (CLAIM_MIN_SHARE + 8);
    const runs = await app.backend.claim(named, want, WORKER, 0);
    expect(servedBy(runs)).toEqual(open);
    for (const queue of open) expect(runs.filter((run) => run.queue === queue)).toHaveLength(want / open.length);
  });
});
