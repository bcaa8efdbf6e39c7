import { TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** Worker ids are host:pid:slot. */
const pidOf = (workerId: string) => Number(workerId.split(':').at(-2));

/** Enqueues `count` witness runs of `ms` each. */
const enqueueWork = async (app: Harness, count: number, ms: number) =>
  (await app.queue.enqueueMany(Array.from({ length: count }, () => ({ task: 'WitnessService.work', args: [ms] })))).map(
    (r) => r.id,
  );

/** A run's status and attempts, as `SUCCESSFUL/1`. */
const state = (run: TaskResult) => `${run.status}/${run.attempts}`;

/** The current records of `ids`. */
const results = async (app: Harness, ids: string[]) => (await app.queue.getResults(ids)).map((r) => r!) as TaskResult[];

describe('the worker pool (real processes, real signals)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setup(options: { leaseTtlMs?: number } = {}) {
    const app = await Harness.start({ options: { alias: uniqueAlias('pool'), ...options } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    return { app, witness };
  }

  function pool(alias: string, args: string[], env: Record<string, string> = {}, group = false): WorkerProcess {
    const process = WorkerProcess.start(alias, args, env, group);
    cleanup.push(() => process.stop());
    return process;
  }

  it('on SIGTERM during a busy drain returns prefetched runs at once, and every run succeeds exactly once', async () => {
    const { app, witness } = await setup();
    const ids = await enqueueWork(app, 200, 40);
    const first = pool(app.alias, ['--workers', '2', '--concurrency', '4', '--prefetch', '4']);
    await waitUntil('40 runs completed', async () => (await witness.completed()) >= 40);
    first.signal('SIGTERM');
    expect(await first.waitForExit(), first.log).toEqual({ code: 0, signal: null });
    // A process hands back what it had prefetched; one caught with every run
    // executing (its next claim not yet due) has nothing to hand back.
    expect(first.log.match(/Handed \d+ prefetched run\(s\) back to READY/g)?.length ?? 0).toBeGreaterThanOrEqual(1);

    const afterStop = await results(app, ids);
    expect(afterStop.filter((r) => r.status === TaskStatus.RUNNING)).toEqual([]);
    for (const returned of afterStop.filter((r) => r.status === TaskStatus.READY)) {
      expect(returned).toMatchObject({ attempts: 0, workerIds: [] });
    }
    const [counts] = await app.queue.counts(['default']);
    expect(counts!.running).toBe(0);

    const second = pool(app.alias, ['--workers', '2', '--concurrency', '4', '--exit-empty']);
    expect(await second.waitForExit()).toEqual({ code: 0, signal: null });
    const final = await results(app, ids);
    expect(final.every((r) => r.status === TaskStatus.SUCCESSFUL && r.attempts === 1 && r.errors.length === 0)).toBe(
      true,
    );
    const completions = await witness.completions();
    expect(completions.size).toBe(200);
    expect([...completions.values()].every((n) => n === 1)).toBe(true);
    expect([...(await witness.starts()).values()].every((n) => n === 1)).toBe(true);
  });

  it('exits 0 when told to stop while its processes are still starting', async () => {
    const { app } = await setup();
    const ids = await enqueueWork(app, 20, 10);
    const proc = pool(app.alias, ['--workers', '2', '--concurrency', '2']);
    // Both members were just spawned: they are loading modules and booting Nest.
    await proc.waitForOutput(/Started worker slot 1 /);
    proc.signal('SIGTERM');
    expect(await proc.waitForExit(), proc.log).toEqual({ code: 0, signal: null });
    expect(proc.log).not.toMatch(/killed by SIGTERM|exited with code/);
    // Whatever a member claimed before it stopped went back or finished: nothing is left leased.
    const [counts] = await app.queue.counts(['default']);
    expect(counts!.running).toBe(0);
    expect(
      (await results(app, ids)).every((r) => r.status === TaskStatus.READY || r.status === TaskStatus.SUCCESSFUL),
    ).toBe(true);
  });

  it('drains when one signal reaches every process of the pool at once (Ctrl-C, a service manager)', async () => {
    const { app, witness } = await setup();
    const ids = await enqueueWork(app, 40, 300);
    const proc = pool(app.alias, ['--workers', '2', '--concurrency', '2', '--prefetch', '2'], {}, true);
    // Both processes up and running runs: a process still booting when the
    // signal comes is a different case (it exits before it consumes).
    await waitUntil('runs executing in both processes', async () => {
      const pids = new Set([...(await witness.startPids()).values()].flat());
      return pids.size === 2 && (await witness.starts()).size >= 4;
    });
    // Each member gets the signal itself and the supervisor's stop besides:
    // one request to drain, not a second signal asking to stop hard.
    proc.signalGroup('SIGINT');
    expect(await proc.waitForExit(), proc.log).toEqual({ code: 0, signal: null });
    expect(proc.log).not.toMatch(/stopping hard|stopped hard/);
    const [counts] = await app.queue.counts(['default']);
    expect(counts!.running).toBe(0);
    const after = await results(app, ids);
    // Each run is either handed back untouched or finished on its one attempt.
    expect(after.filter((run) => !['READY/0', 'SUCCESSFUL/1'].includes(state(run))).map(state)).toEqual([]);
    // What ran had finished: every started run completed, once.
    const completions = await witness.completions();
    expect([...(await witness.starts()).keys()].every((id) => completions.get(id) === 1)).toBe(true);
  });

  it('restarts a SIGKILLed process within a second; its runs come back after the lease, charged only if they had started', async () => {
    const { app, witness } = await setup();
    const ids = await enqueueWork(app, 24, 1_500);
    const env = { LEASE_TTL_MS: '1500', BROKER_INTERVAL_MS: '100' };
    const proc = pool(app.alias, ['--workers', '2', '--concurrency', '2', '--prefetch', '1', '--exit-empty'], env);
    await waitUntil('both processes run tasks', async () => {
      const workers = await app.backend.workers();
      return workers.length === 2 && workers.every((w) => w.held > 0);
    });
    const victim = (await app.backend.workers()).find((w) => w.id.endsWith(':1'))!;
    const victimPid = pidOf(victim.id);
    await waitUntil('the victim runs two tasks', async () => (await witness.starts()).size >= 4);
    const heldByVictim = (await results(app, ids))
      .filter((r) => r.status === TaskStatus.RUNNING && r.workerIds.at(-1) === victim.id)
      .map((r) => r.id);
    expect(heldByVictim.length).toBeGreaterThanOrEqual(2);

    const startedBeforeKill = await witness.starts();
    const killedAt = Date.now();
    process.kill(victimPid, 'SIGKILL');
    await proc.waitForOutput(
      new RegExp(`Worker slot 1 \\(pid ${victimPid}\\) was killed by SIGKILL; restarting in \\d+ ms`),
    );
    await waitUntil('slot 1 is started again', () => proc.log.match(/Started worker slot 1 /g)!.length === 2);
    const restarted = [...proc.log.matchAll(/Started worker slot 1 \(pid (\d+)\)/g)].map((m) => Number(m[1]));
    expect(restarted).toHaveLength(2);
    expect(restarted[1]).not.toBe(victimPid);
    await waitUntil('the new process is up', async () =>
      (await app.backend.workers()).some((w) => w.id.endsWith(':1') && pidOf(w.id) === restarted[1]),
    );
    const restartDelay = Number(/restarting in (\d+) ms/.exec(proc.log)![1]);
    expect(restartDelay).toBeLessThanOrEqual(1_000);
    expect(Date.now() - killedAt).toBeLessThan(10_000);

    expect((await proc.waitForExit(60_000)).code).toBe(0);
    const final = await results(app, ids);
    expect(final.every((r) => r.status === TaskStatus.SUCCESSFUL)).toBe(true);
    // The victim's attempts that had started were charged; what it only held
    // (prefetched) went back uncharged and ran once.
    const recovered = heldByVictim.map((id) => final.find((x) => x.id === id)!);
    const anyWorker: unknown = expect.any(String);
    const expected = recovered.map((run) =>
      startedBeforeKill.has(run.id)
        ? { attempts: 2, errors: ['AcknowledgementTimeoutError'], firstWorker: victim.id }
        : { attempts: 1, errors: [], firstWorker: anyWorker },
    );
    expect(
      recovered.map((run) => ({
        attempts: run.attempts,
        errors: run.errors.map((e) => e.errorClass),
        firstWorker: run.workerIds[0],
      })),
    ).toEqual(expected);
    const charged = recovered.filter((run) => startedBeforeKill.has(run.id)).length;
    expect(charged).toBeGreaterThanOrEqual(2);
    expect((await witness.completions()).size).toBe(24);
  });

  it('recycles a process after --max-tasks runs', async () => {
    const { app, witness } = await setup();
    const ids = await enqueueWork(app, 45, 5);
    const proc = pool(app.alias, ['--workers', '1', '--concurrency', '2', '--max-tasks', '10', '--exit-empty']);
    expect((await proc.waitForExit(60_000)).code).toBe(0);
    expect((await results(app, ids)).every((r) => r.status === TaskStatus.SUCCESSFUL)).toBe(true);
    expect(
      proc.log.match(/Recycling worker slot 0 \(pid \d+\): it reached --max-tasks/g)!.length,
    ).toBeGreaterThanOrEqual(4);
    const pids = await witness.pids();
    expect(pids.length).toBeGreaterThanOrEqual(5);
    // Each process claimed at most --max-tasks runs: the limit is never overshot.
    const perProcess = new Map<string, number>();
    for (const r of await results(app, ids))
      perProcess.set(r.workerIds[0]!, (perProcess.get(r.workerIds[0]!) ?? 0) + 1);
    expect(Math.max(...perProcess.values())).toBeLessThanOrEqual(10);
  });

  it('never runs more than workers × concurrency runs at once', async () => {
    const { app, witness } = await setup();
    await enqueueWork(app, 120, 30);
    const proc = pool(app.alias, ['--workers', '2', '--concurrency', '3', '--prefetch', '5', '--exit-empty']);
    expect((await proc.waitForExit(60_000)).code).toBe(0);
    expect(await witness.completed()).toBe(120);
    const peak = await witness.peak();
    expect(peak).toBeLessThanOrEqual(6);
    expect(peak).toBeGreaterThanOrEqual(4);
  });

  it('starts a run enqueued into an idle pool promptly', async () => {
    const { app } = await setup();
    const proc = pool(app.alias, ['--workers', '2']);
    await waitUntil('both processes are idle and recorded', async () => (await app.backend.workers()).length === 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { id } = await app.queue.enqueue('MathService.add', [i, i]);
      const done = await app.waitFor(id);
      latencies.push(done.startedAt!.getTime() - done.enqueuedAt.getTime());
    }
    // Woken, not found by its next idle claim: a pool that missed the wake-up starts a run only when its
    // blocking claim times out (every 10 s), so a second is a bound no loaded machine misses and a lost
    // wake-up does. The benchmark measures the real latency (under a millisecond at p50).
    expect(Math.max(...latencies)).toBeLessThan(1_000);
    proc.signal('SIGTERM');
    expect((await proc.waitForExit()).code).toBe(0);
  });

  it('records live workers with a heartbeat, and a dead process drops out by itself', async () => {
    const { app } = await setup();
    const proc = pool(app.alias, ['--workers', '2', '--concurrency', '5', '--queues', 'default,emails'], {
      LEASE_TTL_MS: '900',
    });
    await waitUntil('both processes are recorded', async () => (await app.backend.workers()).length === 2);
    const workers = await app.backend.workers();
    expect(workers.map((w) => w.id.split(':').at(-1))).toEqual(['0', '1']);
    for (const w of workers) {
      expect(w).toMatchObject({ queues: ['default', 'emails'], concurrency: 5, held: 0, done: 0 });
      expect(w.startedAt).toBeGreaterThan(Date.now() - 60_000);
    }
    const stopped = workers[0]!;
    process.kill(pidOf(stopped.id), 'SIGSTOP');
    cleanup.push(() => {
      try {
        process.kill(pidOf(stopped.id), 'SIGCONT');
      } catch {
        // already gone
      }
    });
    // Its record lives three renewal intervals (900 ms) without a heartbeat.
    await waitUntil(
      'the frozen process drops out',
      async () => (await app.backend.workers()).every((w) => w.id !== stopped.id),
      3_000,
    );
    process.kill(pidOf(stopped.id), 'SIGCONT');
    proc.signal('SIGTERM');
    expect((await proc.waitForExit()).code).toBe(0);
    expect(await app.backend.workers()).toEqual([]);
  });

  it('quarantines a run that keeps killing its worker, and blames none of the runs beside it', async () => {
    const { app, witness } = await setup();
    const innocents = await enqueueWork(app, 30, 30);
    const poison = await app.queue.enqueue('PoisonService.killWorker', []);
    const more = await enqueueWork(app, 30, 30);
    const proc = pool(app.alias, ['--workers', '1', '--concurrency', '4', '--prefetch', '4', '--exit-empty'], {
      LEASE_TTL_MS: '1000',
      BROKER_INTERVAL_MS: '100',
    });
    expect((await proc.waitForExit(90_000)).code).toBe(0);

    const result = await app.queue.getResult(poison.id);
    expect(result.status).toBe(TaskStatus.QUARANTINED);
    expect(result.quarantine).toMatchObject({ reason: 'lease-expired-repeatedly' });
    // It killed three processes, and no more: once before its start was
    // recorded (it dies 1 ms in, before a start mark goes out), which is not
    // charged but makes it a suspect; then twice as a suspect, which
    // announces its start before it runs: each counted against it, not
    // charged, until the third expiry in a row quarantines it, charging that
    // attempt.
    expect(proc.log.match(/was killed by SIGKILL/g)).toHaveLength(3);
    expect(result.attempts).toBe(1);
    expect(result.errors.map((e) => e.errorClass)).toEqual(['AcknowledgementTimeoutError']);
    const others = await results(app, [...innocents, ...more]);
    expect(others.filter((r) => r.status !== TaskStatus.SUCCESSFUL)).toEqual([]);
    expect((await witness.completions()).size).toBe(60);
  });

  it('backs off and reports a process that crash-loops', async () => {
    const { app } = await setup();
    const proc = pool(app.alias, ['--workers', '1'], { CRASH_POOL_MEMBERS: '1' });
    await proc.waitForOutput(
      /Worker slot 0 is crash-looping: 3 exits in a row before it was ready or within 5 s after .*restarting in 2000 ms/,
      60_000,
    );
    const delays = [...proc.log.matchAll(/restarting in (\d+) ms/g)].map((m) => Number(m[1]));
    expect(delays.slice(0, 3)).toEqual([500, 1_000, 2_000]);
    proc.signal('SIGTERM');
    expect((await proc.waitForExit()).code).not.toBeNull();
  });
});
