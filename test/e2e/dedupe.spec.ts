import { TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

const PRODUCER_MAIN = fileURLToPath(new URL('../../dist/test/fixtures/dedupe-producer-main.js', import.meta.url));
const PRODUCERS = 4;
const PER_PRODUCER = 250;

/** What one producer process reports: the run ids its enqueues got, and how many were deduplicated. */
interface ProducerReport {
  readonly ids: string[];
  readonly deduplicated: number;
}

/** Enqueues labels `d0`..`d19` with a debounce key, 100 ms apart; returns each enqueue's result. */
async function debounce(app: Harness, ttlMs: number, maxWaitMs: number): Promise<TaskResult[]> {
  const results: TaskResult[] = [];
  for (let i = 0; i < 20; i++) {
    if (i > 0) await delay(100);
    results.push(
      await app.queue.enqueue('WitnessService.label', [`d${i}`], {
        dedupe: { key: 'debounced', mode: 'debounce', ttlMs, maxWaitMs },
      }),
    );
  }
  return results;
}

/**
 * Deduplication across real processes on the test's Redis: producer
 * processes racing with one key, and a real worker pool whose executions a
 * witness outside Threadmill counts.
 */
describe('deduplication (real processes)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setup() {
    const app = await Harness.start({ options: { alias: uniqueAlias('dedupe') } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    return { app, witness };
  }

  function pool(alias: string): WorkerProcess {
    const worker = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '4']);
    cleanup.push(() => worker.stop());
    return worker;
  }

  /**
   * Starts `PRODUCERS` producer processes, lets them boot, then releases them
   * at once: each sends `PER_PRODUCER` concurrent enqueues with `key`.
   */
  async function race(alias: string, key: string, dedupe: object): Promise<ProducerReport[]> {
    if (!existsSync(PRODUCER_MAIN)) throw new Error(`${PRODUCER_MAIN} is missing: run \`npm run build\` first.`);
    const producers = Array.from({ length: PRODUCERS }, () => {
      const child = spawn(process.execPath, [PRODUCER_MAIN], {
        env: {
          ...process.env,
          REDIS_URL: redisUrl(),
          THREADMILL_ALIAS: alias,
          COUNT: String(PER_PRODUCER),
          KEY: key,
          DEDUPE: JSON.stringify(dedupe),
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      cleanup.push(() => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      return { child, exited, output: () => output };
    });
    for (const producer of producers) {
      await waitUntil('a producer booted', () => {
        if (producer.child.exitCode !== null) throw new Error(`a producer exited:\n${producer.output()}`);
        return producer.output().includes('ready');
      });
    }
    for (const producer of producers) producer.child.stdin.write('go\n');
    const reports: ProducerReport[] = [];
    for (const producer of producers) {
      expect(await producer.exited, producer.output()).toBe(0);
      reports.push(
        JSON.parse(
          producer
            .output()
            .split('\n')
            .find((line) => line.startsWith('{'))!,
        ) as ProducerReport,
      );
    }
    return reports;
  }

  it('1,000 concurrent enqueues with one key from 4 processes, a pool running: one run, executed once', async () => {
    const { app, witness } = await setup();
    pool(app.alias);
    // The key holds for a minute whatever its run does: it may start, and finish, during the race.
    const reports = await race(app.alias, 'one-key', { ttlMs: 60_000 });
    const ids = new Set(reports.flatMap((report) => report.ids));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect(reports.reduce((sum, report) => sum + report.deduplicated, 0)).toBe(PRODUCERS * PER_PRODUCER - 1);
    expect(await app.queue.waitFor(id!, { timeoutMs: 30_000 })).toMatchObject({ status: TaskStatus.SUCCESSFUL });
    // Every enqueue has returned and the one run has finished: nothing else can run.
    expect((await app.queue.counts(['default']))[0]).toMatchObject({
      ready: 0,
      deferred: 0,
      running: 0,
      successful: 1,
      failed: 0,
    });
    expect(await witness.completions()).toEqual(new Map([[id, 1]]));
    expect([...(await witness.labels()).values()]).toEqual([1]);
  });

  it("1,000 concurrent enqueues with one key from 4 processes, releaseOn 'start', no pool yet: one run", async () => {
    const { app, witness } = await setup();
    const reports = await race(app.alias, 'pending-key', {});
    const ids = new Set(reports.flatMap((report) => report.ids));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 1, deferred: 0 });
    pool(app.alias);
    expect(await app.queue.waitFor(id!, { timeoutMs: 30_000 })).toMatchObject({ status: TaskStatus.SUCCESSFUL });
    expect(await witness.completions()).toEqual(new Map([[id, 1]]));
  });

  it('debounce: 20 enqueues 100 ms apart with ttlMs 500 make one run, with the last arguments, within maxWaitMs', async () => {
    const { app, witness } = await setup();
    pool(app.alias);
    const maxWaitMs = 5_000;
    const results = await debounce(app, 500, maxWaitMs);
    const first = results[0]!;
    const last = results.at(-1)!;
    expect(new Set(results.map((r) => r.id))).toEqual(new Set([first.id]));
    expect(results.slice(1).every((r) => r.deduplicated === true)).toBe(true);
    const run = await app.queue.waitFor(first.id, { timeoutMs: 30_000 });
    expect(run).toMatchObject({ status: TaskStatus.SUCCESSFUL, args: ['d19'], returnValue: 'd19', attempts: 1 });
    // Due 500 ms after the last enqueue, which came within the cap; started no earlier, and within the cap.
    expect(run.runAfter).toEqual(last.runAfter);
    expect(run.startedAt!.getTime()).toBeGreaterThanOrEqual(last.runAfter!.getTime());
    expect(run.startedAt!.getTime() - first.enqueuedAt.getTime()).toBeLessThanOrEqual(maxWaitMs);
    expect(await witness.labels()).toEqual(new Map([['d19', 1]]));
  });

  it('debounce: maxWaitMs cuts the debounce short: the run is due at the cap, and later enqueues make the next run', async () => {
    const { app, witness } = await setup();
    pool(app.alias);
    const maxWaitMs = 1_000;
    const results = await debounce(app, 500, maxWaitMs);
    const first = results[0]!;
    const ids = [...new Set(results.map((r) => r.id))];
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const runs = await Promise.all(ids.map((id) => app.queue.waitFor(id, { timeoutMs: 30_000 })));
    // The first run was pushed back to the cap, not past it.
    expect(runs[0]!.runAfter!.getTime()).toBe(first.enqueuedAt.getTime() + maxWaitMs);
    for (const run of runs) {
      expect(run).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1 });
      expect(run.runAfter!.getTime() - run.enqueuedAt.getTime()).toBeLessThanOrEqual(maxWaitMs);
    }
    expect(runs.at(-1)!.args).toEqual(['d19']);
    // Each run executed once, with one label each, and no label twice.
    const labels = await witness.labels();
    expect(labels.size).toBe(ids.length);
    expect([...labels.values()].every((count) => count === 1)).toBe(true);
    expect(labels.get('d19')).toBe(1);
    expect(await witness.completions()).toEqual(new Map(ids.map((id) => [id, 1])));
  });
});
