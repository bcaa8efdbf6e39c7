import { TaskStatus } from '@threadmill/nestjs';
import { freePort } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { scrape, valueOf, type Sample } from '../support/prometheus.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

const RUNS = 120;

describe("the worker pool's Prometheus endpoint (--metrics-port)", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('serves the sum of every process, keeping the counts of recycled processes', async () => {
    const app = await Harness.start({ options: { alias: uniqueAlias('poolmetrics') } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/metrics`;
    const args = ['--workers', '2', '--concurrency', '4', '--max-tasks', '30', '--metrics-port', String(port)];
    const pool = WorkerProcess.start(app.alias, [...args, '--metrics-host', '127.0.0.1']);
    cleanup.push(() => pool.stop());
    await pool.waitForOutput(/Prometheus metrics at http:\/\/127\.0\.0\.1:\d+\/metrics/);

    const runs = await app.queue.enqueueMany(
      Array.from({ length: RUNS }, () => ({ task: 'WitnessService.work', args: [0] })),
    );
    await waitUntil('every run succeeded', async () =>
      (await app.queue.getResults(runs.map((r) => r.id))).every((r) => r?.status === TaskStatus.SUCCESSFUL),
    );
    // A slot logs its recycling when its process exits, which follows its
    // last acknowledgement: the runs can all be SUCCESSFUL a moment before.
    await waitUntil(
      'three processes recycled',
      async () => (pool.log.match(/Recycling worker slot/g)?.length ?? 0) >= 3,
    );
    expect(pool.log.match(/Recycling worker slot/g)?.length).toBeGreaterThanOrEqual(3);

    const work = { queue: 'default', task: 'WitnessService.work' };
    let samples: Sample[] = [];
    await waitUntil('the pool counted every run', async () => {
      samples = await scrape(url);
      return valueOf(samples, 'threadmill_runs_succeeded_total', work) === RUNS;
    });
    expect(valueOf(samples, 'threadmill_run_duration_seconds_count', { ...work, outcome: 'successful' })).toBe(RUNS);
    expect(valueOf(samples, 'threadmill_runs_failed_total', work)).toBe(0);
    expect(valueOf(samples, 'threadmill_queue_runs', { queue: 'default', segment: 'successful' })).toBe(RUNS);
    expect(valueOf(samples, 'threadmill_queue_runs', { queue: 'default', segment: 'ready' })).toBe(0);
    expect(valueOf(samples, 'threadmill_redis_up')).toBe(1);
    // Replacements of recycled processes count once their first heartbeat is in
    // (and scrapes within a second share one snapshot), so this gauge may lag.
    await waitUntil(
      'the gauge counts both live processes',
      async () => valueOf(await scrape(url), 'threadmill_workers', { queue: 'default' }) === 2,
    );
    expect(await app.backend.workers()).toHaveLength(2);
    // Process metrics of the supervisor and its members, summed.
    expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);

    // A second scrape never goes backwards, and the pool stops cleanly with a scraper's connection open.
    expect(valueOf(await scrape(url), 'threadmill_runs_succeeded_total', work)).toBe(RUNS);
    pool.signal('SIGTERM');
    expect(await pool.waitForExit()).toEqual({ code: 0, signal: null });
  });

  it('refuses to start when the metrics port is taken, naming the flag', async () => {
    const alias = uniqueAlias('poolmetrics');
    const port = await freePort();
    const first = WorkerProcess.start(alias, ['--workers', '1', '--metrics-port', String(port)]);
    cleanup.push(() => first.stop());
    await first.waitForOutput(/Prometheus metrics at/);
    const second = WorkerProcess.start(alias, ['--workers', '1', '--metrics-port', String(port)]);
    cleanup.push(() => second.stop());
    expect((await second.waitForExit()).code).toBe(1);
    expect(second.log).toMatch(new RegExp(`--metrics-port ${port} is already in use`));
  });
});
