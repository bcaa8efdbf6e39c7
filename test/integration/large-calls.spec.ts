import { TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '../support/harness.js';

/**
 * Calls far larger than any batch: their arguments must never be spread
 * into one JavaScript call (past about 100,000 arguments that overflows the
 * stack), whatever the size of the call.
 */
describe('large calls', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start();
  });
  afterAll(() => app.close());

  it('stores an atomic enqueueMany whose 40,000 items each travel as their own group', async () => {
    // Caller ids of alternating lengths put each run in a group of its own:
    // four script arguments per run, 160,000 in all.
    const items = Array.from({ length: 40_000 }, (_, i) => ({
      task: 'MathService.add',
      args: [i, 1],
      id: i % 2 ? `odd-${i}` : `even--${i}`,
    }));
    const results = await app.queue.enqueueMany(items);
    expect(results.map((r) => r.id)).toEqual(items.map((item) => item.id));
    expect((await app.queue.counts(['default']))[0]!.ready).toBeGreaterThanOrEqual(40_000);
    const [first, last] = await app.queue.getResults([items[0]!.id, items.at(-1)!.id]);
    expect(first).toMatchObject({ status: TaskStatus.READY, args: [0, 1] });
    expect(last).toMatchObject({ status: TaskStatus.READY, args: [39_999, 1] });
  });

  it('reads 150,000 results in one getResults call, null for each unknown id', async () => {
    const [known] = await app.queue.enqueueMany([{ task: 'MathService.add', args: [1, 2] }]);
    const ids = Array.from({ length: 150_000 }, (_, i) => (i === 149_999 ? known!.id : `unknown-${i}`));
    const results = await app.queue.getResults(ids);
    expect(results).toHaveLength(150_000);
    expect(results.slice(0, -1).every((r) => r === null)).toBe(true);
    expect(results.at(-1)).toMatchObject({ id: known!.id, args: [1, 2] });
  });
});
