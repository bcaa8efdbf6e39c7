import { maskUrl } from '@threadmill/nestjs';
import { freePort } from '@threadmill/nestjs/testing';
import { SingleBar, Presets } from 'cli-progress';
import Table from 'cli-table3';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BatchProgress, BatchSummary } from './demo-batch.service.js';
import type { QuoteAnswer } from './demo.controller.js';
import { ChildApp } from './driver/child-app.js';
import { locateRedis } from './driver/redis-locator.js';

/**
 * `npm run demo`: finds (or starts) Redis, starts the worker app and the demo
 * API, enqueues a realistic mix of runs through the API, shows their progress,
 * asks the worker for a quote through the API (request/response) and ends
 * with a summary.
 */
const RUNS = Number(process.env['DEMO_RUNS'] ?? 10_000);
/** Keep the apps (and the dashboard) running after the summary, until Ctrl+C. */
const KEEP_OPEN = /^(1|true|yes)$/i.test(process.env['DEMO_KEEP_OPEN'] ?? '');
/** Run the worker app as a pool of this many processes (pool.js) instead of one microservice (main.js). */
const POOL_WORKERS = process.env['DEMO_WORKERS'] ? Number(process.env['DEMO_WORKERS']) : undefined;
/** What the demo asks the worker's quote handler, through the API. */
const QUOTE_QUERY = 'plan=team&seats=25&months=12';
const here = dirname(fileURLToPath(import.meta.url));
const apiScript = join(here, 'main.js');

/** How the demo starts the worker app. */
interface WorkerLaunch {
  readonly script: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  /** Its consumers, each of which logs `Worker … consuming` when it is ready. */
  readonly consumers: number;
  readonly description: string;
}

/**
 * One Nest microservice with 128 slots by default (on a 2-core machine, as
 * fast as the pool of two processes the demo ran before: see
 * docs/getting-started.md); `DEMO_WORKERS=n` runs the pool of n processes
 * of 64 slots each, for machines with more cores.
 */
function workerLaunch(): WorkerLaunch {
  if (POOL_WORKERS === undefined) {
    return {
      script: join(here, '..', 'worker', 'main.js'),
      args: [],
      env: { THREADMILL_CONCURRENCY: '128', THREADMILL_PREFETCH: '128' },
      consumers: 1,
      description: 'one Nest microservice (main.js), 128 slots',
    };
  }
  return {
    script: join(here, '..', 'worker', 'pool.js'),
    args: ['--workers', String(POOL_WORKERS), '--concurrency', '64', '--prefetch', '64'],
    env: {},
    consumers: POOL_WORKERS,
    description: `a pool of ${POOL_WORKERS} processes (pool.js), 64 slots each`,
  };
}

async function api<T>(port: number, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: body ? { 'content-type': 'application/json' } : undefined,
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function waitForApi(port: number, app: ChildApp): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (!app.running) throw new Error(`the demo API exited:\n${app.log}`);
    try {
      await api(port, '/health');
      return;
    } catch {
      await delay(100);
    }
  }
  throw new Error(`the demo API did not answer within 30 s:\n${app.log}`);
}

function printSummary(summary: BatchSummary, answer: QuoteAnswer, origin: string, worker: string): void {
  const style = { head: ['cyan'] };
  const table = new Table({ head: ['Demo summary', ''], colAligns: ['left', 'right'], style });
  table.push(
    ['Redis', origin],
    ['Worker app', worker],
    ['Runs enqueued', summary.total.toLocaleString('en-US')],
    ...Object.entries(summary.byStatus).map(([status, n]) => [`  ${status}`, n.toLocaleString('en-US')]),
    [
      'Runs retried / retries',
      `${summary.retriedRuns.toLocaleString('en-US')} / ${summary.retries.toLocaleString('en-US')}`,
    ],
    ['Enqueue time (via the API)', `${summary.enqueueMs.toLocaleString('en-US')} ms`],
    ['Wall time (first enqueue to last finish)', `${(summary.wallMs / 1000).toFixed(1)} s`],
    ['Throughput (runs not deferred on purpose)', `${summary.throughput.toLocaleString('en-US')} runs/s`],
    [
      'Latency p50 / p99 (enqueue to finish, first attempts, not deferred)',
      `${summary.latencyP50Ms} ms / ${summary.latencyP99Ms} ms`,
    ],
    [
      `Quote via the worker (${answer.quote.seats} ${answer.quote.plan} seats, ${answer.quote.months} months)`,
      `$${(answer.quote.totalCents / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })}`,
    ],
    ['Quote round trip (client.send to answer)', `${answer.roundTripMs} ms`],
  );
  const kinds = new Table({
    head: ['Mix', 'runs', 'successful', 'failed'],
    colAligns: ['left', 'right', 'right', 'right'],
  });
  for (const kind of summary.byKind) kinds.push([kind.label, kind.runs, kind.successful, kind.failed]);
  console.log(`${kinds.toString()}\n${table.toString()}`);
}

async function main(): Promise<number> {
  const redis = await locateRedis();
  if (!redis) {
    console.error(
      'No Redis found (REDIS_URL unset or not answering, nothing on localhost:6379, no redis-server on PATH): ' +
        'run `docker compose up -d redis` or install Redis (e.g. `sudo apt-get install redis-server`).',
    );
    return 1;
  }
  console.log(`Using ${redis.origin}`);
  const port = await freePort();
  const alias = `demo-${Date.now()}`;
  const env = { ...process.env, REDIS_URL: redis.url, THREADMILL_ALIAS: alias, PORT: String(port) };
  const launch = workerLaunch();
  const worker = ChildApp.start('worker app', launch.script, launch.args, { ...env, ...launch.env });
  const apiApp = ChildApp.start('demo API', apiScript, [], env);
  try {
    await Promise.all([waitForApi(port, apiApp), worker.waitForOutput(/Worker \S+ consuming/, launch.consumers)]);
    const origin = `http://127.0.0.1:${port}`;
    console.log(
      `Dashboard: ${origin}/threadmill  metrics: ${origin}/metrics  health: ${origin}/health/queues` +
        (KEEP_OPEN ? '' : '  (while the demo runs; DEMO_KEEP_OPEN=1 keeps them up)'),
    );
    const { batchId, enqueued } = await api<{ batchId: string; enqueued: number }>(port, '/demo/batches', {
      count: RUNS,
    });
    const bar = new SingleBar(
      { format: 'Running  [{bar}] {percentage}% | {value}/{total} runs | {eta_formatted} left', hideCursor: true },
      Presets.shades_classic,
    );
    bar.start(enqueued, 0);
    for (;;) {
      if (!worker.running) throw new Error(`the worker app exited:\n${worker.log}`);
      const { finished, total } = await api<BatchProgress>(port, `/demo/batches/${batchId}`);
      bar.update(finished);
      if (finished >= total) break;
      await delay(200);
    }
    bar.stop();
    const answer = await api<QuoteAnswer>(port, `/demo/quote?${QUOTE_QUERY}`);
    const summary = await api<BatchSummary>(port, `/demo/batches/${batchId}/summary`);
    printSummary(summary, answer, redis.origin, launch.description);
    if (KEEP_OPEN) {
      console.log(
        `The dashboard stays up at ${origin}/threadmill; in another terminal, ` +
          `REDIS_URL=${maskUrl(redis.url)} npx threadmill inspect --alias ${alias}\nPress Ctrl+C to stop.`,
      );
      await new Promise((resolve) => ['SIGINT', 'SIGTERM'].forEach((signal) => process.once(signal, resolve)));
    }
    return 0;
  } finally {
    const [workerCode] = await Promise.all([worker.stop(), apiApp.stop()]);
    if (workerCode !== 0) console.error(`The worker app exited with ${workerCode}:\n${worker.log.slice(-3000)}`);
    await redis.release(alias);
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`Demo failed: ${error.message}`);
    process.exit(1);
  },
);
