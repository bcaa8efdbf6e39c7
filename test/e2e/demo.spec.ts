import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisUrl } from '../support/backend.js';
import { waitUntil } from '../support/wait.js';

const DEMO = fileURLToPath(new URL('../../dist/apps/demo/run-demo.js', import.meta.url));

describe('npm run demo', () => {
  it('runs a mix through the worker app and the demo API, summarises it and cleans up', async () => {
    const child = spawn(process.execPath, [DEMO], {
      env: { ...process.env, REDIS_URL: redisUrl(), DEMO_RUNS: '400' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    child.stderr.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
    expect(output).toMatch(/Using REDIS_URL/);
    // 400 runs: 1 in 20 charges is declined, everything else succeeds (after retries).
    expect(output).toMatch(/│\s+SUCCESSFUL\s+│\s+3\d\d\s+│/);
    expect(output).toMatch(/│\s+FAILED\s+│\s+\d+\s+│/);
    expect(output).toMatch(/│\s+READY\s+│\s+0\s+│/);
    expect(output).toMatch(/Throughput .*│\s+[\d,]+ runs\/s/);
    const client = new Redis(redisUrl());
    const leftovers = await client.keys('threadmill:{demo-*');
    client.disconnect();
    expect(leftovers).toEqual([]);
  });

  it('with DEMO_KEEP_OPEN=1 keeps the dashboard, metrics and health checks up until Ctrl+C', async () => {
    const child = spawn(process.execPath, [DEMO], {
      env: { ...process.env, REDIS_URL: redisUrl(), DEMO_RUNS: '200', DEMO_KEEP_OPEN: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    child.stderr.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitUntil('the demo finished and stays open', () => /Press Ctrl\+C to stop/.test(output), 50_000);
      const origin = /Dashboard: (http:\/\/127\.0\.0\.1:\d+)\/threadmill/.exec(output)![1]!;
      expect(output).toMatch(/REDIS_URL=redis:\/\/\S+ npx threadmill inspect --alias demo-\d+\n/);

      const page = await fetch(`${origin}/threadmill`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>Threadmill demo</title>');
      const overview = (await (await fetch(`${origin}/threadmill/api/overview`)).json()) as {
        queues: { queue: string; successful: number }[];
      };
      expect(overview.queues.reduce((total, q) => total + q.successful, 0)).toBeGreaterThan(150);
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      expect(metrics).toMatch(/^threadmill_runs_enqueued_total\{queue="emails",task="EmailService.sendWelcome"\} \d+/m);
      const health = await fetch(`${origin}/health/queues`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', info: { workers: { status: 'up' } } });
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited, output).toBe(0);
  });

  it('exits 1 with one line saying how to get Redis when none answers', async () => {
    const child = spawn(process.execPath, [DEMO], {
      env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toMatch(/No Redis found .*run `docker compose up -d redis` or install Redis/);
  });
});
