import { TaskScheduler } from '@threadmill/nestjs';
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** What the witness saw of the `tick` schedule: per slot (epoch ms), its executions' labels and processes. */
interface Executions {
  readonly slots: Map<number, { labels: string[]; pids: number[] }>;
}

/** Reads the witness's start log: entries `<pid> tick@<ISO slot>|<label>`, one per execution. */
async function executions(witness: Witness): Promise<Executions> {
  const slots = new Map<number, { labels: string[]; pids: number[] }>();
  for (const [key, pids] of await witness.startPids()) {
    const [runId, label] = key.split('|') as [string, string];
    const slot = Date.parse(runId.slice(runId.indexOf('@') + 1));
    const entry = slots.get(slot) ?? { labels: [], pids: [] };
    for (const pid of pids) {
      entry.labels.push(label);
      entry.pids.push(pid);
    }
    slots.set(slot, entry);
  }
  return { slots };
}

const sortedSlots = (seen: Executions) => [...seen.slots.keys()].sort((a, b) => a - b);

/** The processes of a pool: its supervisor and its members. */
function poolPids(pool: WorkerProcess): number[] {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pool.pid)], { encoding: 'utf8' });
  return [pool.pid, ...children.split('\n').filter(Boolean).map(Number)];
}

/** Waits until the witness saw slot `slot` run. */
async function slotRan(witness: Witness, slot: number, timeoutMs = 30_000): Promise<void> {
  await waitUntil(
    `slot ${new Date(slot).toISOString()} ran`,
    async () => (await executions(witness)).slots.has(slot),
    timeoutMs,
  );
}

describe('schedules across worker pools (real processes, real signals)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setup() {
    const app = await Harness.start({ options: { alias: uniqueAlias('sched') } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    return { app, witness, scheduler: app.module.get(TaskScheduler) };
  }

  function pool(alias: string, env: Record<string, string>): WorkerProcess {
    const process = WorkerProcess.start(alias, ['--workers', '1', '--concurrency', '2'], env, true);
    cleanup.push(() => process.stop());
    return process;
  }

  it('three pools fire an everyMs 1000 schedule once per slot for 30 s, and go on once when the firing pool is killed', async () => {
    const { app, witness, scheduler } = await setup();
    const env = { SCHEDULE_EVERY_MS: '1000' };
    const pools = [pool(app.alias, env), pool(app.alias, env), pool(app.alias, env)];
    await waitUntil('a slot ran', async () => (await executions(witness)).slots.size > 0, 30_000);
    const first = sortedSlots(await executions(witness))[0]!;
    await slotRan(witness, first + 30_000, 60_000);

    const seen = await executions(witness);
    const window = sortedSlots(seen).filter((slot) => slot >= first && slot < first + 30_000);
    expect(window.length).toBeGreaterThanOrEqual(29);
    expect(window.length).toBeLessThanOrEqual(31);
    // Every slot of the 30 s, each run once.
    expect(window).toEqual(Array.from({ length: 30 }, (_, i) => first + i * 1_000));
    for (const slot of window) expect(seen.slots.get(slot)!.pids, `slot ${slot}`).toHaveLength(1);

    // SIGKILL the pool that fired the last slot: the next slots still run, once each.
    const tick = (await scheduler.list()).find((schedule) => schedule.id === 'tick')!;
    const firer = Number(tick.lastFiredBy!.split(':').at(-2));
    const victim = pools.find((p) => p.pid === firer)!;
    expect(victim, `the firing process ${firer} is a pool's supervisor`).toBeDefined();
    const killed = poolPids(victim);
    victim.signalGroup('SIGKILL');
    const killedAt = tick.lastRunAt!.getTime();
    await slotRan(witness, killedAt + 5_000);

    const after = await executions(witness);
    const all = sortedSlots(after).filter((slot) => slot >= first && slot <= killedAt + 5_000);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => first + i * 1_000));
    for (const slot of all) {
      const { pids } = after.slots.get(slot)!;
      // A run whose execution the kill cut short may run again (at-least-once), in another pool.
      const expected = pids.length > 1 && killed.includes(pids[0]!) ? 2 : 1;
      expect(pids, `slot ${new Date(slot).toISOString()}`).toHaveLength(expected);
    }
    const fired = (await scheduler.list()).find((schedule) => schedule.id === 'tick')!;
    expect(killed).not.toContain(Number(fired.lastFiredBy!.split(':').at(-2)));
  }, 150_000);

  it('a schedule removed from the code stops when the workers restart without it', async () => {
    const { app, witness, scheduler } = await setup();
    const first = pool(app.alias, { SCHEDULE_EVERY_MS: '500' });
    await waitUntil('two slots ran', async () => (await executions(witness)).slots.size >= 2, 30_000);
    first.signal('SIGTERM');
    expect(await first.waitForExit()).toEqual({ code: 0, signal: null });

    const second = pool(app.alias, {});
    await waitUntil('the schedule is gone', async () => (await scheduler.list()).length === 0, 30_000);
    // A slot fired before the removal is a run like any other: it runs. Count from when none is left.
    await waitUntil(
      'the runs fired before the removal finished',
      async () => (await app.queue.counts(['default'])).every((c) => c.ready + c.deferred + c.running === 0),
      30_000,
    );
    const before = (await executions(witness)).slots.size;
    // Six slots' worth of time: none of them runs.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await executions(witness)).slots.size).toBe(before);
    expect(second.log).not.toMatch(/Schedule pass failed/);
  }, 90_000);

  it('two versions side by side fire each slot once, and the newer definition stays in force', async () => {
    const { app, witness, scheduler } = await setup();
    const older = pool(app.alias, { SCHEDULE_EVERY_MS: '500', SCHEDULE_LABEL: 'v1' });
    await waitUntil('a v1 slot ran', async () => (await executions(witness)).slots.size > 0, 30_000);
    pool(app.alias, { SCHEDULE_EVERY_MS: '500', SCHEDULE_LABEL: 'v2' });
    await waitUntil('v2 is in force', async () => (await scheduler.list())[0]?.args[0] === 'v2', 30_000);
    const switched = Date.now();
    // The older version restarts (a crash during the rollout): v2 stays in force.
    older.signalGroup('SIGKILL');
    pool(app.alias, { SCHEDULE_EVERY_MS: '500', SCHEDULE_LABEL: 'v1' });
    await waitUntil(
      '10 s of slots ran',
      async () => sortedSlots(await executions(witness)).at(-1)! > switched + 10_000,
      40_000,
    );

    const seen = await executions(witness);
    const slots = sortedSlots(seen);
    // A new definition starts at its first slot after the change (docs/schedules.md): from then on, every slot.
    const settled = slots.filter((slot) => slot > switched + 1_000);
    expect(settled).toEqual(Array.from({ length: settled.length }, (_, i) => settled[0]! + i * 500));
    expect(settled.length).toBeGreaterThanOrEqual(15);
    expect(settled.map((slot) => seen.slots.get(slot)!.labels)).toEqual(settled.map(() => ['v2']));
    expect(slots.filter((slot) => seen.slots.get(slot)!.labels.length > 2)).toEqual([]);
    // No slot twice, except one whose execution the kill cut short (run again: at-least-once).
    expect(slots.filter((slot) => seen.slots.get(slot)!.labels.length > 1).length).toBeLessThanOrEqual(1);
    expect((await scheduler.list())[0]!.args[0]).toBe('v2');
  }, 120_000);

  it("overlap 'skip' never runs two of a slow schedule's runs at once", async () => {
    const { app, witness, scheduler } = await setup();
    const env = { SCHEDULE_EVERY_MS: '200', SCHEDULE_WORK_MS: '700', SCHEDULE_OVERLAP: 'skip' };
    pool(app.alias, env);
    pool(app.alias, env);
    await waitUntil('six runs completed', async () => (await witness.completed()) >= 6, 60_000);
    expect(await witness.peak()).toBe(1);
    const tick = (await scheduler.list())[0]!;
    expect(tick.skipped).toBeGreaterThan(0);
  }, 90_000);
});
