/**
 * How long a requeue of N failed runs (`TaskInspector.requeueAll`) holds Redis: its script calls from SLOWLOG
 * (those of 1 ms or more: Redis 7 logs the commands a script calls too, so a log of every command would overflow),
 * the longest and median, the wall time and each call's round trip as the client saw it (longest, median, total);
 * then the time of a failed page at offset 0.9 N, and of a ready page as deep, with the same N pending.
 *
 * Run: `node dist/benchmarks/tools/requeue-chunks.js [N=100000]` after `npm run build`.
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TaskBackend, TaskInspector, TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

const n = Number(process.argv[2] ?? 100_000);
const error = { errorClass: 'Error', message: 'boom', stack: '', attempt: 1 };

const server = await RedisServer.start();
const admin = new Redis(server.url);
@Module({ imports: [ThreadmillModule.forRoot({ connection: server.url, alias: 'bench', queues: ['bench'] })] })
class RequeueBenchModule {}
const app = await NestFactory.createApplicationContext(RequeueBenchModule, { logger: ['error'] });
const queue = app.get(TaskQueue);
const backend = app.get(TaskBackend);
const inspector = app.get(TaskInspector);

const stored = Date.now();
for (let first = 0; first < n; first += 5000) {
  const items = Array.from({ length: Math.min(5000, n - first) }, (_, i) => ({
    task: 'bench.noop',
    queue: 'bench',
    args: [{ id: first + i, email: `user${first + i}@example.com` }],
  }));
  await queue.enqueueMany(items);
  const leased = await backend.claim(['bench'], items.length, 'bench:1:0', 0);
  await backend.acknowledge(
    leased.map((run) => ({ id: run.id, queue: 'bench', token: run.token, outcome: { kind: 'failed', error } })),
  );
}
console.log(`${n} failed runs stored in ${Date.now() - stored} ms`);

const timed = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
  const began = process.hrtime.bigint();
  const value = await work();
  return [value, Number(process.hrtime.bigint() - began) / 1e6];
};
const deep = Math.floor(n * 0.9);
const [failedPage, failedPageMs] = await timed(() => inspector.list('bench', 'failed', { offset: deep, limit: 100 }));

await admin.config('SET', 'slowlog-log-slower-than', '1000');
await admin.config('SET', 'slowlog-max-len', '100000');
await admin.slowlog('RESET');
const trips: number[] = [];
let last = process.hrtime.bigint();
const [requeued, wall] = await timed(() =>
  inspector.requeueAll('bench', 'failed', {
    onProgress: () => {
      const now = process.hrtime.bigint();
      trips.push(Number(now - last) / 1e6);
      last = now;
    },
  }),
);
const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
// requeue-all's calls alone: those naming the segment.
const scripts = log
  .filter(([, , , args]) => /^(evalsha|eval)$/i.test(args[0] ?? '') && args.includes('failed'))
  .map((entry) => entry[2] / 1000);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
console.log(
  `requeueAll of ${requeued} failed runs: ${wall.toFixed(0)} ms wall, ${trips.length} calls; ` +
    `round trips: longest ${Math.max(...trips).toFixed(2)} ms, median ${median(trips).toFixed(2)}, total ${sum(trips).toFixed(0)}; ` +
    `SLOWLOG (calls of 1 ms or more: ${scripts.length}): longest ${Math.max(0, ...scripts).toFixed(2)} ms, ` +
    `median ${median(scripts).toFixed(2)}, total ${sum(scripts).toFixed(0)}`,
);
const [readyPage, readyPageMs] = await timed(() => inspector.list('bench', 'ready', { offset: deep, limit: 100 }));
console.log(
  `pages at offset ${deep} of ${n}: failed ${failedPage.length} runs in ${failedPageMs.toFixed(2)} ms, ` +
    `ready ${readyPage.length} runs in ${readyPageMs.toFixed(2)} ms (round trips, records read)`,
);
await app.close();
admin.disconnect();
await server.stop();
