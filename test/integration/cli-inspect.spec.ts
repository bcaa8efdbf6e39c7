import { TaskScheduler } from '@threadmill/nestjs';
import { ScheduleRunner } from '../../libs/threadmill/src/schedule/schedule-runner.js';
import {
  createInspector,
  RedisUnavailableError,
  TaskResultNotFoundError,
  TaskStatus,
  type StandaloneInspector,
  type TaskResult,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { render } from 'ink-testing-library';
import { createServer } from 'node:net';
import { stripVTControlCharacters } from 'node:util';
import { createElement } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../libs/threadmill-cli/src/ui/app.js';
import { EchoService, FailService, MailService, MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const ESC = '\u001B';
const ENTER = '\r';

/** The inspector UI at 80×24 on a real inspector, with what a test needs to drive and read it. */
interface Screen {
  readonly inspector: StandaloneInspector;
  /** The latest frame, without colours. */
  frame(): string;
  press(keys: string): void;
  /** Waits until the frame matches; fails showing the last frame. */
  until(pattern: RegExp): Promise<string>;
}

/** A run id as the run list shows it at 80 columns: its random tail, after an ellipsis. */
const tail = (id: string) => `…${id.slice(-12)}`;

/** Makes `run` FAILED by hand: claims it as worker host:1:0 and acknowledges a failure with a stack. */
async function fail(harness: Harness, run: TaskResult, message: string): Promise<void> {
  const [lease] = await harness.backend.claim([run.queue], 1, 'host:1:0', 0);
  if (lease?.id !== run.id) throw new Error(`claimed ${lease?.id}, not the run to fail ${run.id}`);
  const stack = `FixtureError: ${message}\n    at FailService.alwaysFail (test/fixtures/fixture-tasks.ts:60:11)`;
  await harness.backend.acknowledge([
    {
      id: run.id,
      queue: run.queue,
      token: lease.token,
      outcome: { kind: 'failed', error: { errorClass: 'FixtureError', message, stack, attempt: 1 } },
    },
  ]);
}

describe('threadmill inspect (the Ink app against a real Redis)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function producer(alias: string, connection = redisUrl()): Promise<Harness> {
    const harness = await Harness.start({ options: { alias, connection } });
    cleanups.push(() => harness.close());
    return harness;
  }

  async function open(alias: string, connection = redisUrl()): Promise<Screen> {
    const inspector = await createInspector({ connection, alias });
    cleanups.push(() => inspector.close());
    const ui = render(
      createElement(App, {
        inspector: inspector.inspector,
        describe: inspector.describe,
        alias,
        intervalMs: 300,
        columns: 80,
        rows: 24,
      }),
    );
    cleanups.push(() => ui.unmount());
    const frame = () => stripVTControlCharacters(ui.lastFrame() ?? '');
    return {
      inspector,
      frame,
      press: (keys) => ui.stdin.write(keys),
      async until(pattern) {
        try {
          await waitUntil(`the screen shows ${pattern}`, () => pattern.test(frame()), 10_000);
        } catch (error) {
          throw new Error(`${(error as Error).message}; the screen was:\n${frame()}`, { cause: error });
        }
        return frame();
      },
    };
  }

  it('fails at once with RedisUnavailableError when the connection is refused, not after its connect timeout', async () => {
    // A port just released: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const started = Date.now();
    const error = await createInspector({ connection: `redis://127.0.0.1:${port}`, connectTimeoutMs: 60_000 }).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}/0: .*ECONNREFUSED`));
    // Far less than the minute it was allowed: it did not wait the timeout out.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("projects kept results with the result TTL and warning ratio it is given (it cannot read the applications')", async () => {
    const server = await RedisServer.start({ args: ['--maxmemory', '64mb'] });
    cleanups.push(() => server.stop());
    const alias = uniqueAlias('cli');
    await producer(alias, server.url);
    const given = await createInspector({
      connection: server.url,
      alias,
      resultTtlMs: 60_000,
      memoryWarningRatio: 0.5,
    });
    cleanups.push(() => given.close());
    expect(await given.inspector.capacity()).toMatchObject({
      resultTtlMs: { successful: 60_000, failed: 60_000 },
      warningRatio: 0.5,
      maxBytes: 64 * 1024 * 1024,
    });
    const defaults = await createInspector({ connection: server.url, alias });
    cleanups.push(() => defaults.close());
    expect(await defaults.inspector.capacity()).toMatchObject({
      resultTtlMs: { successful: 86_400_000, failed: 86_400_000 },
      warningRatio: 0.8,
    });
  });

  it("shows Redis's share of maxmemory in its header, and the capacity warning once it is over 80%", async () => {
    const server = await RedisServer.start({ args: ['--maxmemory', '2mb'] });
    cleanups.push(() => server.stop());
    const alias = uniqueAlias('cli');
    const harness = await producer(alias, server.url);
    const screen = await open(alias, server.url);
    expect(await screen.until(/ mem \d+% · \d\d:\d\d:\d\d/)).not.toMatch(/! mem/);
    // Pending runs of about 2 KB each, until Redis's memory in use is over the threshold (and below its limit).
    while ((await harness.backend.memory()).usedBytes! < 0.85 * 2 * 1024 * 1024) {
      await harness.queue.enqueueMany(
        Array.from({ length: 20 }, () => ({ task: EchoService, method: 'echo' as const, args: ['x'.repeat(2_000)] })),
      );
    }
    const frame = await screen.until(/! mem \d+%/);
    expect(frame).toMatch(/Redis memory in use has reached \d+% of maxmemory/);
  });

  it('shows every queue with its counts per segment, within 80×24', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    await fail(harness, await harness.queue.enqueue(FailService, 'alwaysFail', ['boom']), 'boom');
    await harness.queue.enqueue(SlowService, 'sleep', [10]);
    await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    await harness.queue.enqueueMany(Array.from({ length: 3 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    await harness.queue.enqueue(MathService, 'add', [1, 1], { delayMs: 60_000 });
    await harness.queue.enqueue(MailService, 'send', [{ to: 'ann@example.com', subject: 'Hi' }]);

    const screen = await open(alias);
    //                                  READY RUN DEFER SUCC FAIL QUAR
    await screen.until(/▸ default\s+3\s+1\s+1\s+0\s+1\s+0\s/);
    // The ready tab lists the three ready runs of the first queue.
    const frame = await screen.until(/(MathService\.add\s+READY[^]*){3}/);
    expect(frame).toMatch(/ {2}emails\s+1\s+0\s+0\s+0\s+0\s+0\s/);
    expect(frame).toMatch(/ {2}reports\s+0\s+0\s+0\s+0\s+0\s+0\s/);
    expect(frame).toContain(`Threadmill · 3 queues · 0 workers · ${alias}@${screen.inspector.describe}`);
    expect(frame.match(/MathService\.add\s+READY/g)).toHaveLength(3);
    const lines = frame.split('\n');
    expect(lines.length).toBeLessThanOrEqual(24);
    expect(lines.filter((line) => [...line].length > 80)).toEqual([]);
  });

  it("shows a running run's progress and last log lines in its detail, as they change", async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const running = await harness.queue.enqueue(SlowService, 'sleep', [10]);
    const [lease] = await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    await harness.backend.report([{ ...lease!, progress: '{"step":2,"of":5}', lines: ['fetched 40 rows', 'parsing'] }]);

    const screen = await open(alias);
    screen.press('2');
    await screen.until(new RegExp(`▸ ${tail(running.id)} SlowService\\.sleep\\s+RUNNING`));
    screen.press(ENTER);
    expect(await screen.until(/Progress/)).toMatch(/Progress\s+\{"step":2,"of":5\}/);
    // The log lines are below the fold: the pane scrolls to them.
    screen.press(`${ESC}[6~`); // Page Down
    expect(await screen.until(/fetched 40 rows\s+parsing/)).toMatch(/Logs \(last 2\)\s+fetched 40 rows\s+parsing/);
    await harness.backend.report([{ ...lease!, progress: '{"step":5,"of":5}', lines: ['written'] }]);
    expect(await screen.until(/Logs \(last 3\)/)).toMatch(/\{"step":5,"of":5\}[\s\S]*parsing\s+written/);
  });

  it('switches tabs with 1–6, opens a FAILED run with its error and stack, and requeues it with R then y', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const failed = await harness.queue.enqueue(FailService, 'alwaysFail', ['boom']);
    await fail(harness, failed, 'the payment gateway said no');
    const running = await harness.queue.enqueue(SlowService, 'sleep', [10]);
    await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    await harness.queue.enqueue(MathService, 'add', [1, 1], { delayMs: 60_000 });

    const screen = await open(alias);
    await screen.until(/default · ready: empty/);
    screen.press('2');
    await screen.until(new RegExp(`▸ ${tail(running.id)} SlowService\\.sleep\\s+RUNNING\\s+1 `));
    expect(screen.frame()).toContain('default · running: run 1 of 1');
    screen.press('3');
    await screen.until(/▸ \S+ MathService\.add\s+READY\s+0 in \d+[sm]/);
    expect(screen.frame()).toContain('default · deferred: run 1 of 1');
    screen.press('5');
    await screen.until(new RegExp(`▸ ${tail(failed.id)} FailService\\.alwaysFail\\s+FAILED\\s+1 `));
    expect(screen.frame()).toContain('default · failed: run 1 of 1');

    screen.press(ENTER);
    let detail = await screen.until(/Errors \(1\)/);
    expect(detail).toContain(`Run ${failed.id}`);
    expect(detail).toMatch(/status\s+FAILED/);
    expect(detail).toMatch(/workers\s+host:1:0/);
    expect(detail).toContain('"boom"');
    expect(detail).toContain('#1 attempt 1: FixtureError: the payment gateway said no');
    // The stack may be below the fold: the pane scrolls to it.
    screen.press(`${ESC}[6~`); // Page Down
    detail = await screen.until(/at FailService\.alwaysFail \(test\/fixtures\/fixture-tasks\.ts:60:11\)/);
    expect(detail).toContain('FixtureError: the payment gateway said no');

    screen.press('R');
    await screen.until(new RegExp(`Requeue run ${failed.id} \\(FAILED\\) to READY\\?`));
    screen.press('y');
    await screen.until(/Requeued run/);
    const requeued = await harness.queue.getResult(failed.id);
    expect(requeued).toMatchObject({ status: TaskStatus.READY, attempts: 1 });
    expect(requeued.errors).toHaveLength(1);
    // The pane follows the run: it is READY now, and R refuses it.
    await screen.until(/status\s+READY/);
    screen.press('R');
    await screen.until(/Run is READY: only FAILED, QUARANTINED or CANCELLED runs can be requeued/);
    screen.press(ESC);
    await screen.until(/▸ default\s+1\s+1\s+1\s+0\s+0\s+0\s/);
  });

  it('cancels a pending run with c after y, leaves it after n, and shows it in the cancelled tab', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const [first] = await harness.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1] },
      { task: 'MathService.add', args: [2, 2] },
    ]);

    const screen = await open(alias);
    await screen.until(new RegExp(`▸ ${tail(first!.id)}`));
    screen.press('c');
    await screen.until(new RegExp(`Cancel run ${first!.id} \\(READY\\)\\?`));
    screen.press('n');
    await screen.until(/Cancel called off/);
    expect((await harness.queue.getResult(first!.id)).status).toBe(TaskStatus.READY);
    screen.press('c');
    await screen.until(/Cancel run .*\?/);
    screen.press('y');
    await screen.until(new RegExp(`Cancelled run ${first!.id}`));
    expect((await harness.queue.getResult(first!.id)).status).toBe(TaskStatus.CANCELLED);
    screen.press('7');
    await screen.until(new RegExp(`▸ ${tail(first!.id)}[^\\n]*CANCELLED`));
    await screen.until(/default · cancelled: run 1 of 1/);
    // A CANCELLED run cannot be cancelled again, and R sends it back.
    screen.press('c');
    await screen.until(/Run is CANCELLED: only pending or running runs can be cancelled/);
  });

  it('dequeues a pending run after y, and leaves it after n', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const [first, second] = await harness.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1] },
      { task: 'MathService.add', args: [2, 2] },
    ]);

    const screen = await open(alias);
    await screen.until(new RegExp(`▸ ${tail(first!.id)}`));
    screen.press('d');
    await screen.until(/Dequeue run .* and delete it\?/);
    screen.press('n');
    await screen.until(/Dequeue cancelled/);
    screen.press('d');
    await screen.until(/Dequeue run .* and delete it\?/);
    screen.press('y');
    await screen.until(new RegExp(`Dequeued run ${first!.id}`));
    await expect(harness.queue.getResult(first!.id)).rejects.toThrow(TaskResultNotFoundError);
    expect((await harness.queue.getResult(second!.id)).status).toBe(TaskStatus.READY);
    await screen.until(new RegExp(`▸ ${tail(second!.id)}`));
  });

  it('purges a queue only once its name is typed', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    await fail(harness, await harness.queue.enqueue(FailService, 'alwaysFail', ['x']), 'x');
    await harness.queue.enqueueMany(Array.from({ length: 5 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    await harness.queue.enqueue(MathService, 'multiply', [2, 3]);

    const screen = await open(alias);
    await screen.until(/▸ default\s+5\s+0\s+0\s+0\s+1\s+0\s/);
    screen.press('p');
    await screen.until(/Purge EVERY run of default\? Type its name/);
    screen.press('emails');
    screen.press(ENTER);
    await screen.until(/Purge cancelled: "emails" is not "default"/);
    expect((await screen.inspector.inspector.counts(['default']))[0]).toMatchObject({ ready: 5, failed: 1 });

    screen.press('p');
    await screen.until(/Purge EVERY run of default\?/);
    screen.press('defaultx');
    screen.press('\u007F'); // Backspace
    await screen.until(/default▌/);
    screen.press(ENTER);
    await screen.until(/Purged queue default: 6 runs removed/);
    expect(await screen.inspector.inspector.counts(['default', 'reports'])).toEqual([
      {
        queue: 'default',
        waiting: 0,
        ready: 0,
        deferred: 0,
        running: 0,
        successful: 0,
        failed: 0,
        quarantined: 0,
        cancelled: 0,
      },
      {
        queue: 'reports',
        waiting: 0,
        ready: 1,
        deferred: 0,
        running: 0,
        successful: 0,
        failed: 0,
        quarantined: 0,
        cancelled: 0,
      },
    ]);
    await screen.until(/▸ default\s+0\s+0\s+0\s+0\s+0\s+0\s/);
  });

  it('requeues every run of the failed tab after A and y, and says where A applies', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    for (const message of ['x', 'y', 'z']) {
      await fail(harness, await harness.queue.enqueue(FailService, 'alwaysFail', [message]), message);
    }
    await harness.queue.enqueue(MathService, 'add', [1, 1]);

    const screen = await open(alias);
    await screen.until(/▸ default\s+1\s+0\s+0\s+0\s+3\s+0\s/);
    screen.press('A');
    await screen.until(/Requeue all applies to the failed, quarantined and cancelled tabs/);
    screen.press('5');
    await screen.until(/default · failed: run 1 of 3/);
    screen.press('A');
    await screen.until(/Requeue EVERY failed run of default to READY\?/);
    screen.press('n');
    await screen.until(/Requeue all cancelled/);
    screen.press('A');
    await screen.until(/Requeue EVERY failed run of default/);
    screen.press('y');
    await screen.until(/Requeued 3 failed runs of queue default/);
    expect((await screen.inspector.inspector.counts(['default']))[0]).toMatchObject({ ready: 4, failed: 0 });
  });

  it("shows a queue's concurrency cap and rate limit after its name", async () => {
    const alias = uniqueAlias('cli');
    await producer(alias);
    const screen = await open(alias);
    await screen.inspector.inspector.setConcurrencyCap('default', 5);
    await screen.inspector.inspector.setRateLimit('default', { max: 50, perMs: 1_000 });
    // The list cuts the name's cell at 80 columns; the status line shows the marks in full.
    await screen.until(/▸ default CAP 5 /);
    await screen.until(/default CAP 5 50\/1s · ready: empty/);
    expect(await screen.inspector.inspector.concurrencyCap('default')).toBe(5);
  });

  it('pauses and resumes the queue shown with P, and marks it paused', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    await harness.queue.enqueueMany(Array.from({ length: 3 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));

    const screen = await open(alias);
    await screen.until(/▸ default\s+3\s+0\s/);
    screen.press('P');
    await screen.until(/Paused queue default: no new run starts/);
    await screen.until(/▸ default PAUSED\s+3\s+0\s/);
    expect(await screen.inspector.inspector.pauseState('default')).toMatchObject({ paused: true });
    // Paused in Redis, for every worker: a claim takes nothing.
    expect(await harness.backend.claim(['default'], 3, 'host:1:0', 0)).toEqual([]);

    screen.press('P');
    await screen.until(/Resumed queue default: workers claim its runs again/);
    await screen.until(/▸ default\s+3\s+0\s/);
    expect(await screen.inspector.inspector.pauseState('default')).toMatchObject({ paused: false });
    expect(await harness.backend.claim(['default'], 3, 'host:1:0', 0)).toHaveLength(3);
  });

  it('shows the live workers with the leases they hold', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const run = await harness.queue.enqueue(SlowService, 'sleep', [10]);
    await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    const heartbeat = { id: 'host:1:0', queues: ['default'], concurrency: 1, startedAt: Date.now(), done: 0, held: 1 };
    await harness.backend.renew(heartbeat, 10_000, []);

    const screen = await open(alias);
    await screen.until(/Threadmill · 3 queues · 1 worker · /);
    screen.press('w');
    // The leases are read once the view is open; the lines wait for them.
    const view = await screen.until(new RegExp(`${run.id} default\\s+SlowService\\.sleep\\s+in \\d+s`));
    expect(view).toContain('Workers (1 live)');
    expect(view).toContain('host:1:0 · queues default');
    expect(view).toMatch(/concurrency 1 · runs done 0 · runs held 1/);
    screen.press(ESC);
    await screen.until(/QUEUE\s+READY/);
  });

  it('shows the schedules with their next run (and last run, none yet)', async () => {
    const alias = uniqueAlias('cli');
    const harness = await producer(alias);
    const scheduler = harness.module.get(TaskScheduler);
    await scheduler.upsert('hourly-sum', {
      task: 'MathService.add',
      args: [1, 2],
      cron: '0 * * * *',
      tz: 'Europe/Berlin',
    });
    // Plan its first slot, as a worker's scheduler does.
    const store = harness.backend.schedules;
    const runner = new ScheduleRunner(store, { declarations: () => [], queues: [], firedBy: 'host:1:0' });
    await runner.pass();

    const screen = await open(alias);
    await screen.until(/Threadmill · 3 queues/);
    screen.press('s');
    const view = await screen.until(/next \d{4}-\d\d-\d\d \d\d:00:00\.000 \(in /);
    expect(view).toContain('Schedules (1)');
    expect(view).toContain('hourly-sum · MathService.add · cron 0 * * * * (Europe/Berlin)');
    expect(view).toMatch(/runs 0 · skipped 0 · queue default · api · overlap allow/);
    expect(view).toMatch(/catch-up latest ·\s+args \[1,2\]/);
    expect(view).toMatch(/last —/);
    screen.press(ESC);
    await screen.until(/QUEUE\s+READY/);
  });
});
