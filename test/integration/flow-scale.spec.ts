import { TaskStatus } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { Harness } from '../support/harness.js';

const CHILDREN = 50_000;
const WORKER = 'host:1:0';

/**
 * Redis commands run so far, those scripts run included (INFO commandstats
 * counts each `redis.call`), but for the scripts and INFO calls themselves:
 * the work of a script counted exactly, whatever the machine's load.
 */
async function commandsRun(harness: Harness): Promise<number> {
  const stats = await harness.backend.connections.client.info('commandstats');
  let total = 0;
  for (const [, name, calls] of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
    if (name !== 'evalsha' && name !== 'eval' && name !== 'info') total += Number(calls);
  }
  return total;
}

/**
 * Completes every claimable run of `default` in claims of 1,000, each
 * acknowledged as one batch; returns the Redis commands the acknowledgements
 * ran per completion, and how many were completed.
 */
async function drain(harness: Harness, expected: number): Promise<{ perRun: number; done: number }> {
  let done = 0;
  let commands = 0;
  while (done < expected) {
    const leased = await harness.backend.claim(['default'], 1_000, WORKER, 0);
    if (leased.length === 0) break;
    const before = await commandsRun(harness);
    const acks = leased.map((run) => ({
      id: run.id,
      queue: run.queue,
      token: run.token,
      outcome: { kind: 'successful', returnValue: '1' } as const,
    }));
    expect((await harness.backend.acknowledge(acks)).every(Boolean)).toBe(true);
    commands += (await commandsRun(harness)) - before;
    done += leased.length;
  }
  return { perRun: commands / done, done };
}

// A fan-in of 50,000 children to one parent, on a real Redis: stored in parts,
// the parent readied once, by O(1) work per child completion.
describe('flows at scale', () => {
  let harness: Harness | undefined;
  afterEach(() => harness?.close());

  it('fans 50,000 children into one parent: stored whole, readied once after the last, each completion O(1)', async () => {
    harness = await Harness.start({});
    const client = harness.backend.connections.client;
    const memory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);

    // The work of a completion with 1,000 children first, then with 50,000: alike if it does not scan.
    const small = await harness.queue.enqueueBatch({
      runs: Array.from({ length: 1_000 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      onComplete: { task: 'FlowService.sum', args: [0] },
    });
    const smallCost = await drain(harness, 1_000);
    expect(await harness.queue.getResult(small.nodes['onComplete']!)).toMatchObject({ status: TaskStatus.READY });
    await harness.backend.purge('default');

    const before = await memory();
    const big = await harness.queue.enqueueBatch({
      runs: Array.from({ length: CHILDREN }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      onComplete: { task: 'FlowService.sum', args: [0] },
    });
    const flowBytes = (await memory()) - before;
    const parent = big.nodes['onComplete']!;
    expect(await harness.queue.getResult(parent)).toMatchObject({ status: TaskStatus.WAITING });
    expect((await harness.queue.counts(['default']))[0]).toMatchObject({ ready: CHILDREN, waiting: 1 });

    const bigCost = await drain(harness, CHILDREN);
    expect(bigCost.done).toBe(CHILDREN);
    // The parent was readied once, by the last completion, and is the one run left.
    expect(await harness.queue.getResult(parent)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    const [last] = await harness.backend.claim(['default'], 10, WORKER, 0);
    expect(last!.id).toBe(parent);
    expect(await harness.backend.claim(['default'], 10, WORKER, 0)).toEqual([]);
    const stored = (await harness.backend.flows.load(big.id))!;
    expect(stored.nodes).toHaveLength(CHILDREN + 1);
    expect(stored.nodes.filter((node) => node.outcome === 'SUCCESSFUL')).toHaveLength(CHILDREN);

    // The work per completion does not grow with the fan-in: no scan of the children.
    console.log(
      `flow fan-in of ${CHILDREN}: stored in ${flowBytes} B (${(flowBytes / CHILDREN).toFixed(0)} B per child and edge); ` +
        `Redis commands per completion ${smallCost.perRun.toFixed(2)} at 1,000 children, ${bigCost.perRun.toFixed(2)} at ${CHILDREN}`,
    );
    expect(bigCost.perRun).toBeLessThanOrEqual(smallCost.perRun + 0.1);
  }, 180_000);
});
