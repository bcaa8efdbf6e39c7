import { maskUrl } from '@threadmill/nestjs';
import { freePort } from '@threadmill/nestjs/testing';
import { SingleBar, Presets } from 'cli-progress';
import Table from 'cli-table3';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BatchProgress, BatchSummary } from './demo-batch.service.js';
import { ChildApp } from './driver/child-app.js';
import { locateRedis } from './driver/redis-locator.js';

/**
 * `npm run demo`: finds (or starts) Redis, starts the worker app and the demo
 * API, enqueues a realistic mix of runs through the API, shows their progress
 * and ends with a summary.
 */
const RUNS = Number(process.env['DEMO_RUNS'] ?? 10_000);
/** Keep the apps (and the dashboard) running after the summary, until Ctrl+C. */
const KEEP_OPEN = /^(1|true|yes)$/i.test(process.env['DEMO_KEEP_OPEN'] ?? '');
/** Worker processes, as the worker app's own default: one per CPU. */
const WORKERS = Number(process.env['DEMO_WORKERS'] ?? availableParallelism());
const here = dirname(fileURLToPath(import.meta.url));
const workerScript = join(here, '..', 'worker', 'main.js');
const apiScript = join(here, 'main.js');

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

function printSummary(summary: BatchSummary, origin: string): void {
  const style = { head: ['cyan'] };
  const table = new Table({ head: ['Demo summary', ''], colAligns: ['left', 'right'], style });
  table.push(
    ['Redis', origin],
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
  const worker = ChildApp.start(
    'worker app',
    workerScript,
    ['--workers', String(WORKERS), '--concurrency', '64', '--prefetch', '64'],
    env,
  );
  const apiApp = ChildApp.start('demo API', apiScript, [], env);
  try {
    await Promise.all([waitForApi(port, apiApp), worker.waitForOutput(/Worker \S+ consuming/, WORKERS)]);
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
    printSummary(await api<BatchSummary>(port, `/demo/batches/${batchId}/summary`), redis.origin);
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
