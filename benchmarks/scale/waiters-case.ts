/**
 * Concurrent `waitFor` (issue 45: 100 → 10k in one producer): `size` runs
 * enqueued and waited on at once. Redis's CPU per second while they wait
 * and nothing settles, the producer's RSS; then the runs are claimed and
 * acknowledged through the backend (batches of 100, as a worker would) and
 * each waiter's latency is from its run's acknowledgement call to its
 * `waitFor` resolving. Redis's idle CPU before any waiter is the baseline
 * (its own timers).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { chunks, percentiles, rssMb, ScaleRedis } from './measure.js';
import { SCALE_QUEUE, scaleApp, scalePayload } from './scale-app.js';
import type { ScaleCase } from './scale-case.js';

const BATCH = 100;
const IDLE_MS = 3_000;

export const waitersCase: ScaleCase = {
  name: 'waiters',
  base: 100,
  smokeBase: 10,
  unit: 'concurrent waitFor',
  async measure(size) {
    const redis = await ScaleRedis.start();
    const { app, queue, backend } = await scaleApp(redis.url);
    try {
      const ids: string[] = [];
      for (const call of chunks(size, (i) => ({ task: 'scale.noop', args: [scalePayload(i)] }))) {
        ids.push(...(await queue.enqueueMany(call)).map((run) => run.id));
      }
      const baseline = await redis.cpuUs();
      await delay(IDLE_MS);
      const baselineUsPerS = ((await redis.cpuUs()) - baseline) / (IDLE_MS / 1_000);
      const resolvedAt = new Map<string, number>();
      const waits = ids.map((id) => queue.waitFor(id).then(() => resolvedAt.set(id, performance.now())));
      // Registrations go out in calls of 500 a tick; give them time to land before the idle window.
      await delay(1_000 + size / 10);
      const idleCpu = await redis.cpuUs();
      await delay(IDLE_MS);
      const idleUsPerS = ((await redis.cpuUs()) - idleCpu) / (IDLE_MS / 1_000);
      const idleRss = rssMb();

      const ackedAt = new Map<string, number>();
      const cpuBefore = await redis.cpuUs();
      const began = performance.now();
      for (let offset = 0; ackedAt.size < size; offset++) {
        const runs = await backend.claim([SCALE_QUEUE], BATCH, 'h:1:0', offset);
        if (runs.length === 0) throw new Error(`the waiters case found ${size - ackedAt.size} runs not claimable`);
        const sent = performance.now();
        await backend.acknowledge(
          runs.map(({ id, queue: q, token }) => ({
            id,
            queue: q,
            token,
            outcome: { kind: 'successful', returnValue: undefined },
          })),
        );
        for (const run of runs) ackedAt.set(run.id, sent);
      }
      await Promise.all(waits);
      const wallS = (Math.max(...resolvedAt.values()) - began) / 1_000;
      const cpu = (await redis.cpuUs()) - cpuBefore;
      const latencies = ids.map((id) => Math.max(0, resolvedAt.get(id)! - ackedAt.get(id)!));
      return [
        { size, operation: 'idle, runs stored, no waiter yet (Redis CPU µs per second)', redisUsPerOp: baselineUsPerS },
        {
          size,
          operation: 'idle, every waiter waiting (Redis CPU µs per second)',
          redisUsPerOp: idleUsPerS,
          rssMb: idleRss,
        },
        {
          size,
          operation: `claim + acknowledge, batches of ${BATCH}, to waitFor resolved (per run; latency from the ack's call)`,
          opsPerS: size / wallS,
          redisUsPerOp: cpu / size,
          ...percentiles(latencies),
          rssMb: rssMb(),
        },
      ];
    } finally {
      await app.close();
      await redis.stop();
    }
  },
};
