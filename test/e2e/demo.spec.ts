import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisUrl } from '../support/backend.js';
import { waitUntil } from '../support/wait.js';

const DEMO = fileURLToPath(new URL('../../dist/apps/demo/run-demo.js', import.meta.url));

/** A running `npm run demo` (the built driver), its output without colours. */
interface Demo {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

function startDemo(env: NodeJS.ProcessEnv): Demo {
  const child = spawn(process.execPath, [DEMO], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
  child.stderr!.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output: () => output, exited };
}

describe('npm run demo', () => {
  it('runs a mix through the worker microservice and the demo API, gets a quote, summarises and cleans up', async () => {
    const demo = startDemo({ REDIS_URL: redisUrl(), DEMO_RUNS: '400' });
    const code = await demo.exited;
    const output = demo.output();
    expect(code, output).toBe(0);
    expect(output).toMatch(/Using REDIS_URL/);
    expect(output).toMatch(/Worker app .*│\s+one Nest microservice \(main\.js\), 128 slots\s+│/);
    // 400 runs: 1 in 20 charges is declined, everything else succeeds (after retries).
    expect(output).toMatch(/│\s+SUCCESSFUL\s+│\s+3\d\d\s+│/);
    expect(output).toMatch(/│\s+FAILED\s+│\s+\d+\s+│/);
    expect(output).toMatch(/│\s+READY\s+│\s+0\s+│/);
    expect(output).toMatch(/Throughput .*│\s+[\d,]+ runs\/s/);
    // Priced by the worker's @MessagePattern handler: 25 seats × 12 months × $15, 10% off for 20+ seats, 5% for a year.
    expect(output).toMatch(/Quote via the worker \(25 team seats, 12 months\)\s+│\s+\$3,825\.00\s+│/);
    expect(output).toMatch(/Quote round trip .*│\s+[\d.]+ ms\s+│/);
    // The worker drained and exited 0 at the demo's SIGTERM.
    expect(output).not.toMatch(/The worker app exited with/);
    const client = new Redis(redisUrl());
    const leftovers = await client.keys('threadmill:{demo-*');
    client.disconnect();
    expect(leftovers).toEqual([]);
  });

  it("with DEMO_WORKERS=2 runs the worker app as runWorker's pool of two processes", async () => {
    const demo = startDemo({ REDIS_URL: redisUrl(), DEMO_RUNS: '200', DEMO_WORKERS: '2' });
    const code = await demo.exited;
    const output = demo.output();
    expect(code, output).toBe(0);
    expect(output).toMatch(/Worker app .*│\s+a pool of 2 processes \(pool\.js\), 64 slots each\s+│/);
    expect(output).toMatch(/│\s+READY\s+│\s+0\s+│/);
    expect(output).toMatch(/Quote via the worker .*│\s+\$3,825\.00\s+│/);
    expect(output).not.toMatch(/The worker app exited with/);
  });

  it('with DEMO_KEEP_OPEN=1 keeps the dashboard, metrics and health checks up until Ctrl+C', async () => {
    const demo = startDemo({ REDIS_URL: redisUrl(), DEMO_RUNS: '200', DEMO_KEEP_OPEN: '1' });
    try {
      await waitUntil('the demo finished and stays open', () => /Press Ctrl\+C to stop/.test(demo.output()), 50_000);
      const output = demo.output();
      const origin = /Dashboard: (http:\/\/127\.0\.0\.1:\d+)\/threadmill/.exec(output)![1]!;
      expect(output).toMatch(/REDIS_URL=redis:\/\/\S+ npx threadmill inspect --alias demo-\d+\n/);

      const page = await fetch(`${origin}/threadmill`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>Threadmill demo</title>');
      const overview = (await (await fetch(`${origin}/threadmill/api/overview`)).json()) as {
        queues: { queue: string; successful: number }[];
      };
      expect(overview.queues.reduce((total, q) => total + q.successful, 0)).toBeGreaterThan(150);
      // The worker's scheduled task, fired every 5 s, is listed with its next and last run.
      type Schedules = {
        schedules: { id: string; runs: number; nextRunAt: string | null; lastRunAt: string | null }[];
      };
      const schedules = async () =>
        ((await (await fetch(`${origin}/threadmill/api/schedules`)).json()) as Schedules).schedules;
      await waitUntil('the scheduled task ran', async () => ((await schedules())[0]?.runs ?? 0) >= 1, 20_000);
      const [refresh] = await schedules();
      expect(refresh).toMatchObject({ id: 'stats.refresh' });
      expect(Date.parse(refresh!.nextRunAt!)).toBeGreaterThan(Date.parse(refresh!.lastRunAt!));
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      expect(metrics).toMatch(/^threadmill_runs_enqueued_total\{queue="emails",task="EmailService.sendWelcome"\} \d+/m);
      const health = await fetch(`${origin}/health/queues`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', info: { workers: { status: 'up' } } });
    } finally {
      demo.child.kill('SIGINT');
    }
    expect(await demo.exited, demo.output()).toBe(0);
  });

  it('exits 1 with one line saying how to get Redis when none answers', async () => {
    const demo = startDemo({ REDIS_URL: 'redis://127.0.0.1:1' });
    const code = await demo.exited;
    const output = demo.output();
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toMatch(/No Redis found .*run `docker compose up -d redis` or install Redis/);
  });
});
