import { afterEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import { Harness } from '../support/harness.js';

const error = { errorClass: 'Error', message: 'boom', stack: '', attempt: 1 };

/**
 * A page of a finished segment deep in a large index is a range of the index
 * (docs/scale.md, "Pending runs: purge and deep listings"): it must list
 * the same runs as the page cut from the whole listing.
 */
describe('deep pages of finished segments', () => {
  let app: Harness;
  afterEach(() => app.close());

  /** Finishes `n` runs with `outcome` (kept `resultTtlMs` when given), in finish order. */
  const finish = async (n: number, outcome: Outcome, resultTtlMs?: number): Promise<string[]> => {
    const ids = Array.from({ length: n }, (_, i) => `${outcome.kind}-${resultTtlMs ?? 0}-${i}`);
    await app.queue.enqueueMany(ids.map((id) => ({ task: 'MathService.add', args: [1, 1], id })));
    const finished: string[] = [];
    while (finished.length < n) {
      const leased = await app.backend.claim(['default'], 100, 'deep:1:0', 0);
      const acks = leased.map((run) => ({ id: run.id, queue: 'default', token: run.token, outcome, resultTtlMs }));
      await app.backend.acknowledge(acks);
      finished.push(...leased.map((run) => run.id));
    }
    return finished;
  };
  const pageOf = (segment: 'successful' | 'failed', offset: number, limit: number) =>
    app.backend.list('default', segment, offset, limit);

  it('lists the page at any offset of one index, and of several merged', async () => {
    app = await Harness.start({});
    const succeeded = await finish(1_200, { kind: 'successful', returnValue: '2' });
    const failed = await finish(1_200, { kind: 'failed', error });
    // Equal finish times (one acknowledgement's) order by id: the whole listing is the oracle.
    const whole = { successful: await pageOf('successful', 0, 5_000), failed: await pageOf('failed', 0, 5_000) };
    expect(whole.successful).toEqual([...succeeded].reverse());
    expect(new Set(whole.failed)).toEqual(new Set(failed));
    for (const offset of [0, 1, 599, 1_100, 1_199, 1_200]) {
      expect(await pageOf('successful', offset, 50)).toEqual(whole.successful.slice(offset, offset + 50));
      expect(await pageOf('failed', offset, 50)).toEqual(whole.failed.slice(offset, offset + 50));
    }
    // With a TTL class too, pages are merged from the indexes' newest entries: the same cut.
    await finish(300, { kind: 'failed', error }, 60_000);
    const merged = await pageOf('failed', 0, 5_000);
    expect(merged).toHaveLength(1_500);
    for (const offset of [0, 250, 1_400]) {
      expect(await pageOf('failed', offset, 100)).toEqual(merged.slice(offset, offset + 100));
    }
  });
});
