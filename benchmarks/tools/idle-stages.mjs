#!/usr/bin/env node
// Where an idle run's enqueue-to-start time goes, stage by stage, for the
// benchmark's Threadmill or bee-queue worker: runs trickled in 5 ms apart (as
// in the benchmark's latency phase) while tcpdump timestamps the loopback
// packets that carry each run (its payload holds its enqueue time, which
// names it), and a hook in the worker (idle-stages-hook.mjs) times its
// socket's last 'data' event before the handler starts.
//
//   producer  the enqueue call until the request is on the wire
//   redis     until the last packet carrying the run reaches the worker
//             (bee-queue's worker pops the id, then reads the job: two trips)
//   wake      until the worker's event loop reads it
//   worker    until the handler starts
//
// Usage: node idle-stages.mjs [threadmill|bee-queue] [samples=200]
// Needs tcpdump and the right to capture on lo (root, or CAP_NET_RAW), and
// `npm run build`. tcpdump's own work slows every stage a little.
import { RedisServer } from '@threadmill/nestjs/testing';
import { fork, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const system = process.argv[2] ?? 'threadmill';
const samples = Number(process.argv[3] ?? 200);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer, beeQueueProducer } = await import(join(dist, 'lib/producers.js'));
const { payload, now } = await import(join(dist, 'workers/protocol.js'));

const server = await RedisServer.start();
const port = new URL(server.url).port;
const capture = spawn('tcpdump', ['-i', 'lo', '-tt', '-n', '-l', '-A', '-s', '0', `tcp port ${port}`], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
let captured = '';
let complaints = '';
capture.stdout.on('data', (chunk) => (captured += chunk));
capture.stderr.on('data', (chunk) => (complaints += chunk));
capture.on('error', async (error) => {
  console.error(`tcpdump did not start (${error.message}): install it (apt-get install tcpdump).`);
  await server.stop();
  process.exit(1);
});
const producer =
  system === 'threadmill' ? await threadmillProducer(server.url, 'bench') : await beeQueueProducer(server.url, 'bench');
const worker = fork(
  join(dist, 'workers', system === 'threadmill' ? 'threadmill-worker.js' : 'beequeue-worker.js'),
  [],
  {
    env: { ...process.env, REDIS_URL: server.url, BENCH_QUEUE: 'bench', BENCH_CONCURRENCY: '200' },
    execArgv: ['--import', fileURLToPath(new URL('idle-stages-hook.mjs', import.meta.url))],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  },
);
const message = (type) => new Promise((resolve) => worker.on('message', (m) => m.type === type && resolve(m)));
await message('ready');
await delay(1_000);

const sent = [];
for (let i = 0; i < samples; i++) {
  const t = now();
  sent.push(t);
  await producer.enqueue(payload(i, t));
  await delay(5);
}
await delay(200);
const stats = message('stats');
worker.send({ cmd: 'stats' });
const { latencies } = await stats;
const readAt = message('hook');
worker.send({ cmd: 'hook' });
const { dataAt } = await readAt;
await delay(200);
capture.kill('SIGINT');
await new Promise((resolve) => capture.once('exit', resolve));

// tcpdump -A: a header line `<epoch s.µs> IP <addr>.<port> > <addr>.<port>: ...`, then the payload.
const packets = [];
for (const line of captured.split('\n')) {
  const header = /^(\d+\.\d+) IP [\d.]+\.(\d+) > [\d.]+\.(\d+):/.exec(line);
  if (header) packets.push({ at: Number(header[1]) * 1000, from: header[2], to: header[3], body: '' });
  else if (packets.length > 0) packets.at(-1).body += line;
}
if (packets.length === 0) {
  console.error(`tcpdump captured nothing: capturing on lo needs root or CAP_NET_RAW.\n${complaints}`);
  process.exit(1);
}
const stages = { producer: [], redis: [], wake: [], worker: [], total: [] };
sent.forEach((t, i) => {
  const carrying = packets.filter((p) => p.body.includes(JSON.stringify(t)));
  const request = carrying.find((p) => p.to === port);
  const delivery = carrying.filter((p) => p.from === port).at(-1);
  if (!request || !delivery || latencies[i] === undefined || dataAt[i] === undefined) return;
  const started = t + latencies[i];
  stages.producer.push(request.at - t);
  stages.redis.push(delivery.at - request.at);
  stages.wake.push(dataAt[i] - delivery.at);
  stages.worker.push(started - dataAt[i]);
  stages.total.push(started - t);
});
const pct = (values, p) => [...values].sort((a, b) => a - b)[Math.ceil((p / 100) * values.length) - 1];
for (const [stage, values] of Object.entries(stages)) {
  console.log(
    `${system.padEnd(10)} ${stage.padEnd(8)} p50 ${pct(values, 50).toFixed(3)} ms  p90 ${pct(values, 90).toFixed(3)} ms  (${values.length} runs)`,
  );
}
worker.kill('SIGTERM');
await producer.close();
await server.stop();
process.exit(0);
