/**
 * Where an idle run's enqueue-to-start time goes, stage by stage, from the loopback packets that carry it.
 *
 * Run: `node dist/benchmarks/tools/idle-stages.js [threadmill|bee-queue] [samples=200]` after `npm run build`
 * (needs tcpdump and the right to capture on lo: root, or CAP_NET_RAW).
 *
 * The benchmark's Threadmill or bee-queue worker gets runs trickled in 5 ms
 * apart, as in the benchmark's latency phase, while tcpdump timestamps the
 * packets that carry each run (its payload holds its enqueue time, which
 * names it), and a preload in the worker (`lib/idle-stages-hook`) times its
 * socket's last 'data' event before the handler starts:
 *
 *   producer  the enqueue call until the request is on the wire
 *   redis     until the last packet carrying the run reaches the worker
 *             (bee-queue's worker pops the id, then reads the job: two trips)
 *   wake      until the worker's event loop reads it
 *   worker    until the handler starts
 *
 * tcpdump's own work slows every stage a little.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { fork, spawn, spawnSync } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { HookReport } from '../lib/idle-stages-hook.js';
import { percentile } from '../lib/phases.js';
import { beeQueueProducer, threadmillProducer } from '../lib/producers.js';
import { now, payload, type FromWorker } from '../workers/protocol.js';

const system = process.argv[2] ?? 'threadmill';
const samples = Number(process.argv[3] ?? 200);
if (system !== 'threadmill' && system !== 'bee-queue') {
  console.error('usage: node dist/benchmarks/tools/idle-stages.js [threadmill|bee-queue] [samples]');
  process.exit(2);
}

const tcpdump = spawnSync('tcpdump', ['--version'], { stdio: 'ignore' });
if (tcpdump.error) {
  console.error(`tcpdump did not start (${tcpdump.error.message}): install it (apt-get install tcpdump).`);
  process.exit(1);
}

const server = await RedisServer.start();
const port = new URL(server.url).port;
const capture = spawn('tcpdump', ['-i', 'lo', '-tt', '-n', '-l', '-A', '-s', '0', `tcp port ${port}`], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
let captured = '';
let complaints = '';
capture.stdout.on('data', (chunk: Buffer) => (captured += chunk.toString()));
capture.stderr.on('data', (chunk: Buffer) => (complaints += chunk.toString()));
const producer = await (system === 'threadmill' ? threadmillProducer : beeQueueProducer)(server.url, 'bench');
const workerFile = system === 'threadmill' ? 'threadmill-worker.js' : 'beequeue-worker.js';
const worker = fork(fileURLToPath(new URL(`../workers/${workerFile}`, import.meta.url)), [], {
  env: { ...process.env, REDIS_URL: server.url, BENCH_QUEUE: 'bench', BENCH_CONCURRENCY: '200' },
  execArgv: ['--import', fileURLToPath(new URL('../lib/idle-stages-hook.js', import.meta.url))],
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
/** The worker's next message of `type`. */
function message<T extends { type: string }>(type: T['type']): Promise<T> {
  return new Promise((resolve) => worker.on('message', (m: T) => m.type === type && resolve(m)));
}
await message('ready');
await delay(1_000);

const sent: number[] = [];
for (let i = 0; i < samples; i++) {
  const t = now();
  sent.push(t);
  await producer.enqueue(payload(i, t));
  await delay(5);
}
await delay(200);
const stats = message<Extract<FromWorker, { type: 'stats' }>>('stats');
worker.send({ cmd: 'stats' });
const { latencies } = await stats;
const hook = message<HookReport>('hook');
worker.send({ cmd: 'hook' });
const { dataAt } = await hook;
await delay(200);
capture.kill('SIGINT');
await new Promise((resolve) => capture.once('exit', resolve));

// tcpdump -A: a header line `<epoch s.µs> IP <addr>.<port> > <addr>.<port>: ...`, then the payload.
const packets: { at: number; from: string; to: string; body: string }[] = [];
for (const line of captured.split('\n')) {
  const header = /^(\d+\.\d+) IP [\d.]+\.(\d+) > [\d.]+\.(\d+):/.exec(line);
  if (header) packets.push({ at: Number(header[1]) * 1000, from: header[2]!, to: header[3]!, body: '' });
  else if (packets.length > 0) packets.at(-1)!.body += line;
}
if (packets.length === 0) {
  console.error(`tcpdump captured nothing: capturing on lo needs root or CAP_NET_RAW.\n${complaints}`);
  worker.kill('SIGTERM');
  await producer.close();
  await server.stop();
  process.exit(1);
}
const stages: Record<'producer' | 'redis' | 'wake' | 'worker' | 'total', number[]> = {
  producer: [],
  redis: [],
  wake: [],
  worker: [],
  total: [],
};
sent.forEach((t, i) => {
  const carrying = packets.filter((p) => p.body.includes(JSON.stringify(t)));
  const request = carrying.find((p) => p.to === port);
  const delivery = carrying.filter((p) => p.from === port).at(-1);
  const latency = latencies[i];
  const read = dataAt[i];
  if (!request || !delivery || latency === undefined || read === undefined) return;
  const started = t + latency;
  stages.producer.push(request.at - t);
  stages.redis.push(delivery.at - request.at);
  stages.wake.push(read - delivery.at);
  stages.worker.push(started - read);
  stages.total.push(started - t);
});
for (const [stage, values] of Object.entries(stages)) {
  console.log(
    `${system.padEnd(10)} ${stage.padEnd(8)} p50 ${percentile(values, 50).toFixed(3)} ms  ` +
      `p90 ${percentile(values, 90).toFixed(3)} ms  (${values.length} runs)`,
  );
}
worker.kill('SIGTERM');
await producer.close();
await server.stop();
process.exit(0);
