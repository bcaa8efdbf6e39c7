/**
 * Limit groups (issue 45: 1k → 100k active, runs held back): `size`
 * customers of a task limited to one run at a time per customer
 * (`scale.perCustomer`), two runs each. Claims lease one run a customer and
 * park the other; then, with every group held by its concurrency, what a
 * claim of other runs of the queue costs, what acknowledging a run of a
 * group costs, and the claim that puts the freed groups' parked runs back.
 */
import type { TaskBackend } from '@threadmill/nestjs';
import { chunks, ScaleRedis, timeCalls, timeCallsUntil } from './measure.js';
import { SCALE_QUEUE, scaleApp, scalePayload } from './scale-app.js';
import type { ScaleCase, ScaleRow } from './scale-case.js';

type LeasedRun = Awaited<ReturnType<TaskBackend['claim']>>[number];

const BATCH = 100;
const OTHER_RUNS = 2_000;
/** Claims the case makes at most for the freed groups' runs. */
const MAX_FREEING_CLAIMS = 20_000;

export const groupsCase: ScaleCase = {
  name: 'groups',
  base: 1_000,
  smokeBase: 100,
  unit: 'active limit groups',
  async measure(size) {
    const redis = await ScaleRedis.start();
    const { app, queue, backend } = await scaleApp(redis.url);
    try {
      const rows: ScaleRow[] = [];
      const stores = chunks(2 * size, (i) => ({ task: 'scale.perCustomer', args: [`customer-${i % size}`] }));
      const memoryBefore = await redis.usedMemory();
      const store = await timeCalls(
        redis,
        size,
        'enqueueMany, 2 runs a group, calls of 1,000 (per run; bytes: per group)',
        stores.length,
        (i) => queue.enqueueMany(stores[i]!),
        (i) => stores[i]!.length,
      );
      rows.push({ ...store, redisBytesPerItem: ((await redis.usedMemory()) - memoryBefore) / size });

      // Claims of 1,000 until none is left to lease: one run a group leased, the other parked.
      const leased: LeasedRun[] = [];
      let offset = 0;
      const claimAll = await timeCalls(
        redis,
        size,
        'claim, batches of 1,000, leasing one run a group and parking one (per group)',
        Math.ceil((2 * size) / 1_000) + 1,
        async () => {
          const runs = await backend.claim([SCALE_QUEUE], 1_000, 'h:1:0', offset++);
          leased.push(...runs);
          return runs;
        },
        (_, reply) => (reply as unknown[]).length,
      );
      rows.push(claimAll);

      const others = chunks(OTHER_RUNS, (i) => ({ task: 'scale.noop', args: [scalePayload(i)] }));
      for (const call of others) await queue.enqueueMany(call);
      rows.push(
        await timeCalls(
          redis,
          size,
          `claim of other runs, batches of ${BATCH}, every group held (per run)`,
          OTHER_RUNS / BATCH,
          () => backend.claim([SCALE_QUEUE], BATCH, 'h:1:0', offset++),
          (_, reply) => (reply as unknown[]).length,
        ),
      );

      const grouped = leased.filter((run) => run.payload.startsWith('["scale.perCustomer"')).slice(0, 10 * BATCH);
      const acks = chunks(grouped.length, (i) => grouped[i]!, BATCH);
      rows.push(
        await timeCalls(
          redis,
          size,
          `acknowledge, batches of ${BATCH} runs of distinct groups (per run)`,
          acks.length,
          (i) =>
            backend.acknowledge(
              acks[i]!.map(({ id, queue: q, token }) => ({
                id,
                queue: q,
                token,
                outcome: { kind: 'successful', returnValue: undefined },
              })),
            ),
          (i) => acks[i]!.length,
        ),
      );
      // The freed groups wait for a claim to look at them: claims until each has its parked run leased.
      const freed = await timeCallsUntil(
        redis,
        size,
        (calls) =>
          `claims of ${BATCH} until the ${grouped.length.toLocaleString('en-US')} freed groups' parked runs ` +
          `are leased: ${calls.toLocaleString('en-US')} claims (per run)`,
        MAX_FREEING_CLAIMS,
        () => backend.claim([SCALE_QUEUE], BATCH, 'h:1:0', offset++),
        (_, reply) => (reply as unknown[]).length,
        (total) => total >= grouped.length,
      );
      rows.push(freed.row);
      return rows;
    } finally {
      await app.close();
      await redis.stop();
    }
  },
};
