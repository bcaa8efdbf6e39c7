/**
 * Redis CPU per drained run on each master of a 3-master Redis Cluster, for
 * a backend of 1, 3 and 6 partitions: how much of the work the busiest
 * master carries (docs/scale-out.md).
 *
 * Run: `node dist/benchmarks/tools/partition-cpu.js [M=60000] [partitions=1,3,6] [consumers=4]` after
 * `npm run build`.
 *
 * For each partition count it stores M runs (the benchmark's no-op run, in
 * calls of 1,000), then drains them with `consumers` concurrent claim loops
 * (claims of 300, each acknowledged successful in one call), as a worker's
 * consumer does, through the backend the module builds for that count. Each
 * master's CPU is read from `INFO cpu` (`used_cpu_sys_main_thread +
 * used_cpu_user_main_thread`: the thread that runs commands) before and
 * after each phase. The cluster's nodes are fresh redis-servers, AOF off
 * (the figure is the commands' CPU, not the disk's).
 */
import { Cluster, Redis } from 'ioredis';
import { startBenchCluster } from '../lib/bench-cluster.js';
import { benchRun, libraryBuild, loadModule } from '../lib/tool-support.js';

const [m = 60_000, counts = '1,3,6', consumers = 4] = process.argv
  .slice(2)
  .map((arg, i) => (i === 1 ? arg : Number(arg))) as [number, string, number];
const lib = libraryBuild(process.env['LIB']);
const { RedisConnections } = await loadModule(lib, 'backend/redis/redis-connections.js');
const { createBackend } = await loadModule(lib, 'backend/partitioned/create-backend.js');

const nodes = await startBenchCluster(3);
const direct = nodes.map((node) => new Redis(node.url));

/** Each master's main-thread CPU so far, in µs. */
async function cpu(): Promise<number[]> {
  return Promise.all(
    direct.map(async (client) => {
      const info = await client.info('cpu');
      const field = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)![1]);
      return Math.round((field('used_cpu_sys_main_thread') + field('used_cpu_user_main_thread')) * 1e6);
    }),
  );
}

const rows: string[] = [];
for (const partitions of counts.split(',').map(Number)) {
  const client = new Cluster(
    nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
    { enableOfflineQueue: false },
  );
  const alias = `cpu${partitions}x${Math.random().toString(36).slice(2, 8)}`;
  const connections = new RedisConnections(client, alias, 10_000);
  const settings = { alias, partitions, leaseTtlMs: 30_000, resultTtlMs: 86_400_000, batchSize: 300 };
  const backend = createBackend(connections, settings);
  await connections.ready();
  await backend.prepare();

  const beforeStore = await cpu();
  for (let first = 0; first < m; first += 1_000) {
    const runs = Array.from({ length: Math.min(1_000, m - first) }, (_, i) =>
      benchRun(() => backend.newRunId(), first + i),
    );
    await backend.store(runs);
  }
  const beforeDrain = await cpu();
  const started = performance.now();
  let drained = 0;
  await Promise.all(
    Array.from({ length: consumers }, async (_, c) => {
      const worker = `bench:${process.pid}:${c}`;
      for (let offset = c, misses = 0; misses < 3; offset++) {
        const runs = await backend.claim(['bench'], 300, worker, offset);
        if (runs.length === 0) {
          misses++;
          continue;
        }
        misses = 0;
        const outcome = { kind: 'successful', returnValue: undefined } as const;
        await backend.acknowledge(runs.map((run) => ({ id: run.id, queue: run.queue, token: run.token, outcome })));
        drained += runs.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const afterDrain = await cpu();
  const storeUs = beforeDrain.map((us, i) => us - beforeStore[i]!);
  const drainUs = afterDrain.map((us, i) => us - beforeDrain[i]!);
  const total = drainUs.reduce((a, b) => a + b, 0);
  const perRun = (us: number) => (us / drained).toFixed(2);
  rows.push(
    `| ${partitions} | ${drained} | ${drainUs.map(perRun).join(' / ')} | ${perRun(total)} | ` +
      `${((100 * Math.max(...drainUs)) / total).toFixed(0)}% | ` +
      `${(storeUs.reduce((a, b) => a + b, 0) / m).toFixed(2)} | ${Math.round(drained / seconds)} |`,
  );
  await connections.close();
  client.disconnect();
}

console.log(`Redis CPU (main thread) per drained run, µs: ${m} runs, ${consumers} claim loops, claims of 300`);
console.log(
  '| partitions | drained | per master (µs/run) | all masters | busiest master | store, all (µs/run) | drained/s |',
);
console.log('| ---: | ---: | --- | ---: | ---: | ---: | ---: |');
for (const row of rows) console.log(row);
for (const client of direct) client.disconnect();
await Promise.all(nodes.map((node) => node.stop()));
