/**
 * Dedupe keys (issue 45: 10k → 1M live keys): with `size` runs each holding
 * a key of its own (`mode: 'drop'`, released at start), what an enqueue with
 * a new key and one with a held key (dropped, the held run returned) cost,
 * and what Redis holds per run with its key.
 */
import { chunks, ScaleRedis, timeCalls } from './measure.js';
import { scaleApp, scalePayload } from './scale-app.js';
import type { ScaleCase, ScaleRow } from './scale-case.js';

const PROBES = 1_000;

/** Run i of the case, its key its own. */
const item = (i: number) => ({ task: 'scale.noop', args: [scalePayload(i)], dedupe: { key: `customer:${i}` } });

export const dedupeCase: ScaleCase = {
  name: 'dedupe',
  base: 10_000,
  smokeBase: 1_000,
  unit: 'live dedupe keys',
  async measure(size) {
    const redis = await ScaleRedis.start();
    const { app, queue } = await scaleApp(redis.url);
    try {
      const rows: ScaleRow[] = [];
      const calls = chunks(size, item);
      const memoryBefore = await redis.usedMemory();
      const fill = await timeCalls(
        redis,
        size,
        'enqueueMany with a key each, calls of 1,000 (per run)',
        calls.length,
        (i) => queue.enqueueMany(calls[i]!),
        (i) => calls[i]!.length,
      );
      rows.push({ ...fill, redisBytesPerItem: ((await redis.usedMemory()) - memoryBefore) / size });
      rows.push(
        await timeCalls(redis, size, 'enqueue, a new key (per call)', PROBES, (i) => {
          const { task, args, dedupe } = item(size + i);
          return queue.enqueue(task, args, { dedupe });
        }),
      );
      const step = Math.max(1, Math.floor(size / PROBES));
      rows.push(
        await timeCalls(redis, size, 'enqueue, a held key: dropped (per call)', PROBES, (i) => {
          const { task, args, dedupe } = item((i * step) % size);
          return queue.enqueue(task, args, { dedupe });
        }),
      );
      return rows;
    } finally {
      await app.close();
      await redis.stop();
    }
  },
};
