import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisUrl } from '../support/backend.js';

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
