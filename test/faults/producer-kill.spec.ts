import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';

const PRODUCER_MAIN = fileURLToPath(new URL('../../dist/test/fixtures/producer-main.js', import.meta.url));
const RUNS = scale(60_000, 200_000);
const CHUNK = 128;

/**
 * A producer process SIGKILLed in the middle of one large `enqueueMany`:
 * what Redis holds afterwards is what the call's guarantee says, and every
 * run it holds is whole (a worker pool completes each once).
 */
describe('fault: a producer killed (SIGKILL) in the middle of an enqueueMany', () => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  /** Starts the producer, kills it once Redis holds a first stored run, and returns the ids of all its items. */
  async function killMidCall(atomic: boolean): Promise<string[]> {
    if (!existsSync(PRODUCER_MAIN)) throw new Error(`${PRODUCER_MAIN} is missing: run \`npm run build\` first.`);
    const prefix = `kill-${atomic ? 'a' : 'p'}-`;
    const child = spawn(process.execPath, [PRODUCER_MAIN], {
      env: {
        ...process.env,
        REDIS_URL: rig!.redis.url,
        THREADMILL_ALIAS: rig!.alias,
        COUNT: String(RUNS),
        ID_PREFIX: prefix,
        ATOMIC: String(atomic),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const client = rig!.producer.backend.connections.client;
    const received = async () => Number(/total_net_input_bytes:(\d+)/.exec(await client.info('stats'))![1]);
    const start = await received();
    // Pipelined, the kill comes once a first chunk is stored; atomic, once
    // the call's single command (megabytes) has started to arrive.
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (atomic ? (await received()) - start > 1_000_000 : (await client.hlen(rig!.producer.backend.keys.fresh)) > 0) {
        break;
      }
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the producer never sent its call:\n${output}`);
      await delay(2);
    }
    child.kill('SIGKILL');
    await exited;
    expect(output).not.toMatch(/enqueued/);
    await delay(200); // a chunk Redis had whole is stored; a partial one is dropped with the connection
    return Array.from({ length: RUNS }, (_, i) => `${prefix}${i}`);
  }

  it(
    'with atomic: false, Redis holds whole chunks from the first on, and each of their runs completes once',
    async () => {
      rig = await FaultRig.start({ leaseTtlMs: 2_000, workers: 2, concurrency: 32, prefetch: 64 });
      const ids = await killMidCall(false);
      const present = await rig.producer.queue.getResults(ids);
      const stored = present.findIndex((r) => r === null);
      // A prefix: every item before the first missing one is stored, none after it.
      expect(stored).toBeGreaterThan(0);
      expect(present.slice(stored).every((r) => r === null)).toBe(true);
      expect(stored % CHUNK).toBe(0);
      const storedIds = ids.slice(0, stored);
      rig.startPool();
      const results = await rig.settle(storedIds, 300_000);
      const verdict = await rig.verdict(storedIds, results);
      report({
        scenario: 'producer SIGKILLed during enqueueMany({ atomic: false })',
        runs: stored,
        faults: `1 SIGKILL during a call of ${RUNS} runs; ${stored} stored (${stored / CHUNK} whole chunks of ${CHUNK})`,
        lost: verdict.lost.length,
        duplicates: verdict.duplicates,
        started: verdict.started,
        charged: verdict.charged,
        notes: `what Redis held was a prefix of whole chunks; final statuses ${JSON.stringify(verdict.statuses)}`,
      });
      expect(verdict.lost).toEqual([]);
      expect(verdict.duplicates).toBe(0);
      expect(verdict.statuses).toEqual({ SUCCESSFUL: stored });
      // No worker was touched: each run ran once and was charged once.
      expect(verdict.untouchedNotClean).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'with the atomic default, Redis holds all of the call or none of it',
    async () => {
      rig = await FaultRig.start({ leaseTtlMs: 2_000, workers: 2, concurrency: 32, prefetch: 64 });
      const ids = await killMidCall(true);
      const stored = (await rig.producer.queue.getResults(ids)).filter((r) => r !== null).length;
      report({
        scenario: 'producer SIGKILLed during an atomic enqueueMany',
        runs: RUNS,
        faults: `1 SIGKILL while the call of ${RUNS} runs was being sent`,
        lost: 0,
        duplicates: 0,
        notes: `Redis held ${stored === 0 ? 'none' : 'all'} of the call's runs`,
      });
      expect([0, RUNS]).toContain(stored);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'storing a flow in parts, no node of it runs before its seal, and cancelFlow removes what a killed producer left',
    async () => {
      if (!existsSync(PRODUCER_MAIN)) throw new Error(`${PRODUCER_MAIN} is missing: run \`npm run build\` first.`);
      rig = await FaultRig.start({ leaseTtlMs: 2_000, workers: 1, concurrency: 8, prefetch: 8 });
      const child = spawn(process.execPath, [PRODUCER_MAIN], {
        env: { ...process.env, REDIS_URL: rig.redis.url, THREADMILL_ALIAS: rig.alias, COUNT: '50000', FLOW: 'batch' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const client = rig.producer.backend.connections.client;
      const pattern = `threadmill:{${rig.alias}}:flow:*`;
      // Killed once Redis holds two parts of the flow (of 51).
      let flowKey: string | undefined;
      const deadline = Date.now() + 120_000;
      while (flowKey === undefined || Number(await client.hget(flowKey, 'parts')) < 2) {
        flowKey ??= (await client.keys(pattern)).find((key) => !key.endsWith(':roots'));
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the flow never got 2 parts:\n${output}`);
        await delay(2);
      }
      child.kill('SIGKILL');
      await exited;
      expect(output).not.toMatch(/enqueued/);
      const flowId = flowKey.slice(pattern.length - 1);
      const stored = await rig.producer.backend.flows.load(flowId);
      expect(stored!.state).toBe('STAGING');
      expect(stored!.nodes.length).toBeGreaterThanOrEqual(2_000);
      // Nothing of it is where a claim looks, now or once a pool has had a go.
      rig.startPool();
      expect(await rig.producer.backend.claim(['default'], 1_000, 'test:1:0', 0)).toEqual([]);
      expect((await rig.producer.queue.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, waiting: 0 });
      const cancelled = await rig.producer.queue.cancelFlow(flowId);
      expect(cancelled).toEqual({ cancelled: stored!.nodes.length, state: 'CANCELLED' });
      expect(await client.exists(`${flowKey}:roots`)).toBe(0);
      report({
        scenario: 'producer SIGKILLed while storing a flow in parts',
        runs: stored!.nodes.length,
        faults: `1 SIGKILL once 2 of 51 parts of a 50,001-node flow were stored (${stored!.nodes.length} nodes)`,
        lost: 0,
        duplicates: 0,
        notes: `the flow stayed STAGING with ${stored!.nodes.length} nodes, none claimable; cancelFlow ended them CANCELLED`,
      });
    },
    SCENARIO_TIMEOUT_MS,
  );
});
