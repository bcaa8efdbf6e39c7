/**
 * What `confirmEnqueues` costs a producer: enqueue throughput and latency
 * with and without it, on a Redis Cluster of 3 masters with a replica each
 * (and a backend of 1 or 6 partitions), or on a standalone master with one
 * replica (docs/scale-out.md, "Failover, stated honestly").
 *
 * Run: `node dist/benchmarks/tools/confirmed-enqueue.js [topology=cluster] [partitions=1] [seconds=3] [callers=64]`
 * after `npm run build`; `topology` is `cluster` or `standalone`.
 *
 * Each phase runs one Nest application context (a producer, as an
 * application builds it) for `seconds`: `callers` concurrent loops of single
 * `enqueue` (throughput), one loop of single `enqueue` (latency: p50 and
 * p99 of a call), and `callers` loops of `enqueueMany` of 100 runs. The
 * modes alternate (off, on, off, on), each phase on a fresh alias, so that
 * drift of the machine shows as a difference between rounds. The nodes are
 * fresh redis-servers, AOF off (the figure is the protocol's, not the disk's).
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TaskQueue, ThreadmillModule, type ThreadmillModuleOptions } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Cluster } from 'ioredis';
import { startBenchCluster, untilReply } from '../lib/bench-cluster.js';
import { percentile } from '../lib/phases.js';

const [topology = 'cluster', partitions = 1, seconds = 3, callers = 64] = process.argv
  .slice(2)
  .map((arg, i) => (i === 0 ? arg : Number(arg))) as [string, number, number, number];
const CONFIRM = { replicas: 1, timeoutMs: 1_000 };

/** The servers and the connection option of the topology. */
async function start(): Promise<{ nodes: RedisServer[]; connection: () => ThreadmillModuleOptions['connection'] }> {
  if (topology === 'standalone') {
    const master = await RedisServer.start();
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    await untilReply(replica, ['INFO', 'replication'], (info) => info.includes('master_link_status:up'));
    return { nodes: [master, replica], connection: () => master.url };
  }
  const nodes = await startBenchCluster(3, 1);
  const connection = () =>
    new Cluster(
      nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
      { enableOfflineQueue: false },
    );
  return { nodes, connection };
}

/** Calls `call` from `loops` concurrent loops for `seconds`; how many runs it stored, and each call's duration. */
async function phase(loops: number, call: () => Promise<number>): Promise<{ perSecond: number; calls: number[] }> {
  const calls: number[] = [];
  let runs = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < end) {
        const at = performance.now();
        const stored = await call();
        runs += stored;
        calls.push(performance.now() - at);
      }
    }),
  );
  return { perSecond: runs / ((performance.now() - started) / 1000), calls };
}

const { nodes, connection } = await start();
const rows: string[] = [];
for (const confirm of [false, true, false, true]) {
  const client = connection();
  const options: ThreadmillModuleOptions = {
    connection: client,
    alias: `confirm-${confirm ? 'on' : 'off'}-${Math.random().toString(36).slice(2, 8)}`,
    queues: ['bench'],
    partitions,
    resultTtlMs: 0,
    confirmEnqueues: confirm ? CONFIRM : false,
  };
  @Module({ imports: [ThreadmillModule.forRoot(options)] })
  class ProducerModule {}
  const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error'] });
  const queue = app.get(TaskQueue);
  const one = () => queue.enqueue('bench.noop', [{ id: 1 }], { queue: 'bench' }).then(() => 1);
  const hundred = Array.from({ length: 100 }, (_, i) => ({ task: 'bench.noop', args: [{ id: i }], queue: 'bench' }));
  await phase(8, one); // warm up: connections, scripts, JIT
  const concurrent = await phase(callers, one);
  const sequential = await phase(1, one);
  const bulk = await phase(callers, () => queue.enqueueMany(hundred).then((runs) => runs.length));
  rows.push(
    `| ${confirm ? `on ${JSON.stringify(CONFIRM)}` : 'off'} | ${Math.round(concurrent.perSecond)} | ` +
      `${percentile(sequential.calls, 50).toFixed(3)} / ${percentile(sequential.calls, 99).toFixed(3)} | ` +
      `${Math.round(bulk.perSecond)} |`,
  );
  await app.close();
  if (client instanceof Cluster) client.disconnect();
}

console.log(
  `Confirmed enqueues, ${topology === 'standalone' ? 'a standalone master with a replica' : `a 3+3 cluster, ${partitions} partition(s)`}, ` +
    `${seconds} s a phase, ${callers} callers`,
);
console.log('| confirmEnqueues | single enqueues/s | one caller, ms p50 / p99 | enqueueMany of 100, runs/s |');
console.log('| --- | ---: | ---: | ---: |');
for (const row of rows) console.log(row);
await Promise.all(nodes.map((node) => node.stop()));
