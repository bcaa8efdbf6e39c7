/**
 * Pending runs (issue 45: 10k → 1M): with `size` runs stored, what an
 * enqueue, a claim, the counts, a listing page (first and deep) and a purge
 * cost. The runs are the benchmark's ~40-byte no-op, results not kept.
 */
import { chunks, percentiles, ScaleRedis, timeCalls } from './measure.js';
import { SCALE_QUEUE, scaleApp, scalePayload } from './scale-app.js';
import type { ScaleCase, ScaleRow } from './scale-case.js';

const CLAIM_BATCH = 100;
const PAGE = 100;

export const pendingCase: ScaleCase = {
  name: 'pending',
  base: 10_000,
  smokeBase: 1_000,
  unit: 'pending runs',
  async measure(size) {
    const redis = await ScaleRedis.start();
    const { app, queue, inspector, backend } = await scaleApp(redis.url);
    try {
      const rows: ScaleRow[] = [];
      const calls = chunks(size, (i) => ({ task: 'scale.noop', args: [scalePayload(i)] }));
      const memoryBefore = await redis.usedMemory();
      const store = await timeCalls(
        redis,
        size,
        'enqueueMany, calls of 1,000 (per run)',
        calls.length,
        (i) => queue.enqueueMany(calls[i]!),
        (i) => calls[i]!.length,
      );
      rows.push({ ...store, redisBytesPerItem: ((await redis.usedMemory()) - memoryBefore) / size });

      const claims = Math.max(1, Math.min(20, Math.floor(size / (10 * CLAIM_BATCH))));
      rows.push(
        await timeCalls(
          redis,
          size,
          `claim, batches of ${CLAIM_BATCH} (per run)`,
          claims,
          (i) => backend.claim([SCALE_QUEUE], CLAIM_BATCH, 'h:1:0', i),
          (_, reply) => (reply as unknown[]).length,
        ),
      );
      rows.push(await timeCalls(redis, size, 'counts() (per call)', 50, () => inspector.counts([SCALE_QUEUE])));
      rows.push(
        await timeCalls(redis, size, `ready page of ${PAGE}, offset 0 (per call)`, 50, () =>
          inspector.list(SCALE_QUEUE, 'ready', { offset: 0, limit: PAGE }),
        ),
      );
      const deep = Math.floor((size - claims * CLAIM_BATCH) * 0.9);
      rows.push(
        await timeCalls(
          redis,
          size,
          `ready page of ${PAGE}, offset ${deep.toLocaleString('en-US')} (per call)`,
          50,
          () => inspector.list(SCALE_QUEUE, 'ready', { offset: deep, limit: PAGE }),
        ),
      );
      rows.push(await purge(redis, size, () => inspector.purge(SCALE_QUEUE)));
      return rows;
    } finally {
      await app.close();
      await redis.stop();
    }
  },
};

/** The purge of every run: per run, its script calls' durations (SLOWLOG, every call logged) as the latency. */
async function purge(redis: ScaleRedis, size: number, call: () => Promise<number>): Promise<ScaleRow> {
  await redis.admin.config('SET', 'slowlog-log-slower-than', '0');
  await redis.admin.config('SET', 'slowlog-max-len', '1000000');
  await redis.admin.slowlog('RESET');
  const cpuBefore = await redis.cpuUs();
  const began = performance.now();
  const removed = await call();
  const wallS = (performance.now() - began) / 1_000;
  const cpu = (await redis.cpuUs()) - cpuBefore;
  const log = (await redis.admin.slowlog('GET', -1)) as [number, number, number, string[]][];
  const scripts = log.filter((entry) => /^(evalsha|eval)$/i.test(entry[3][0] ?? '')).map((entry) => entry[2] / 1000);
  await redis.admin.config('SET', 'slowlog-log-slower-than', '10000');
  return {
    size,
    operation: `purge, ${scripts.length} script calls (per run; p50/p99 of a call, SLOWLOG)`,
    opsPerS: removed / wallS,
    redisUsPerOp: removed > 0 ? cpu / removed : undefined,
    ...percentiles(scripts),
  };
}
