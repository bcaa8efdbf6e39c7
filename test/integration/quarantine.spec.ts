import { Injectable, Module } from '@nestjs/common';
import {
  InvalidEnqueueError,
  InvalidInspectionError,
  Task,
  TaskInspector,
  TaskResultNotFoundError,
  TaskStatus,
  type TaskResult,
} from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvents } from '../../libs/threadmill/src/events/run-events.js';
import { RunMetrics } from '../../libs/threadmill/src/metrics/run-metrics.js';
import { getRunEventsToken } from '../../libs/threadmill/src/module/backend-tokens.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { FixtureTasksModule, MailService, MathService, PolicyService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';
import { parseMetrics, valueOf } from '../support/prometheus.js';
import { waitUntil } from '../support/wait.js';
import { readStoredPayload, writeStoredPayload } from '../support/stored-payload.js';

/** A task only some deploys have: producers know it, the first worker does not. */
@Injectable()
class ReportV2Service {
  @Task()
  render(id: number): string {
    return `report ${id}`;
  }
}

@Module({ providers: [ReportV2Service] })
class ReportV2Module {}

const isSettled = (r: TaskResult) =>
  r.status === TaskStatus.SUCCESSFUL || r.status === TaskStatus.FAILED || r.status === TaskStatus.QUARANTINED;

describe('quarantine', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const app = await Harness.start(...args);
    apps.push(app);
    return app;
  }

  it('quarantines a run whose stored payload cannot be read, keeps it raw, and keeps consuming', async () => {
    const app = await start({ worker: { concurrency: 1, prefetch: 0 } });
    await app.worker.close(); // stop the worker while the payload is damaged
    const damaged = await app.queue.enqueue(MathService, 'add', [1, 2]);
    await writeStoredPayload(app.backend, damaged.id, '{"not":"an envelope"');
    const fine = await app.queue.enqueue(MathService, 'add', [2, 3]);

    const worker = await start({ options: { alias: app.alias }, worker: { concurrency: 1, prefetch: 0 } });
    const quarantined = await worker.waitFor(damaged.id, isSettled);
    expect(quarantined.status).toBe(TaskStatus.QUARANTINED);
    expect(quarantined.taskName).toBe('(unreadable payload)');
    expect(quarantined.quarantine).toMatchObject({ reason: 'unreadable-payload', payload: '{"not":"an envelope"' });
    expect(quarantined.quarantine!.message).toMatch(/cannot be read/);
    expect(await app.backend.connections.client.pttl(app.backend.keys.run(damaged.id))).toBe(-1);
    expect((await worker.waitFor(fine.id)).returnValue).toBe(5);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, quarantined: 1 });
  });

  it('quarantines a run of a task this worker does not know, and runs it after a requeue on a worker that does', async () => {
    const alias = uniqueAlias('q');
    const producer = await start({ options: { alias }, imports: [FixtureTasksModule, ReportV2Module] });
    const run = await producer.queue.enqueue(ReportV2Service, 'render', [7]);

    const oldWorker = await start({ options: { alias }, worker: { concurrency: 1 } });
    const quarantined = await oldWorker.waitFor(run.id, isSettled);
    expect(quarantined).toMatchObject({
      status: TaskStatus.QUARANTINED,
      attempts: 1,
      taskName: 'ReportV2Service.render',
    });
    expect(quarantined.quarantine).toMatchObject({ reason: 'unknown-task' });
    expect(quarantined.quarantine!.message).toMatch(/not registered in this worker application/);
    await oldWorker.close();
    apps.splice(apps.indexOf(oldWorker), 1);

    const listed = await producer.module.get(TaskInspector).quarantined('default');
    expect(listed.map((r) => r.id)).toEqual([run.id]);

    await start({ options: { alias }, imports: [FixtureTasksModule, ReportV2Module], worker: { concurrency: 1 } });
    const requeued = await producer.module.get(TaskInspector).requeue(run.id);
    expect(requeued.id).toBe(run.id);
    expect([TaskStatus.READY, TaskStatus.RUNNING, TaskStatus.SUCCESSFUL]).toContain(requeued.status);
    expect(requeued.quarantine).toBeUndefined();
    const done = await producer.waitFor(run.id);
    expect(done).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'report 7', attempts: 2 });
    expect(await producer.module.get(TaskInspector).quarantined('default')).toEqual([]);
  });

  it('warns once per task when a worker that does not import the tasks claims their runs, and counts the runs', async () => {
    const alias = uniqueAlias('q');
    const producer = await start({ options: { alias } });
    const logger = new CapturedLogger();
    // The worker's module imports ThreadmillModule only: the tasks' module was forgotten.
    const worker = await start({ options: { alias }, imports: [], worker: { concurrency: 2 }, logger });
    const registry = new Registry();
    worker.module.get<RunEvents>(getRunEventsToken()).subscribe(new RunMetrics(registry));

    const runs = await producer.queue.enqueueMany([
      ...[1, 2, 3].map((n) => ({ task: 'MathService.add', args: [n, n] })),
      ...['a', 'b'].map((tag) => ({ task: 'OrderService.record', args: [tag] })),
    ]);
    for (const run of runs) {
      expect((await producer.waitFor(run.id, isSettled)).quarantine).toMatchObject({ reason: 'unknown-task' });
    }
    const counted = async (task: string) =>
      valueOf(parseMetrics(await registry.metrics()), 'threadmill_unknown_task_runs_total', { queue: 'default', task });
    await waitUntil('every quarantine is counted', async () => (await counted('MathService.add')) === 3);
    await waitUntil('every quarantine is counted', async () => (await counted('OrderService.record')) === 2);

    const warnings = logger.warnings();
    expect(warnings.filter((line) => /registers no task: every run it claims is quarantined/.test(line))).toHaveLength(
      1,
    );
    for (const task of ['MathService.add', 'OrderService.record']) {
      const told = warnings.filter((line) => line.includes(`Runs of task "${task}" (queue "default")`));
      expect(told).toHaveLength(1);
      expect(told[0]).toMatch(/registers 0 task\(s\)\).*Import the module that provides .* into the worker's module/);
    }
  });

  it('quarantines stored arguments that no longer pass their DTO validation', async () => {
    const app = await start();
    const run = await app.queue.enqueue(MailService, 'send', [{ to: 'ann@example.com', subject: 'Hi' }]);
    // A later deploy tightened the DTO, or the data was edited: the stored arguments are now invalid.
    const payload = (await readStoredPayload(app.backend, run.id))!.replace('ann@example.com', 'not-an-email');
    await writeStoredPayload(app.backend, run.id, payload);
    const worker = await start({ options: { alias: app.alias }, worker: { concurrency: 1 } });
    const result = await worker.waitFor(run.id, isSettled);
    expect(result.status).toBe(TaskStatus.QUARANTINED);
    expect(result.quarantine).toMatchObject({ reason: 'invalid-arguments' });
    expect(result.quarantine!.message).toMatch(/args\[0\] \(SendEmailDto\): to must be an email/);
  });

  it('quarantines a run whose retry policy throws, keeping the task error', async () => {
    const app = await start({ worker: { concurrency: 1 } });
    const run = await app.queue.enqueue(PolicyService, 'withBrokenPolicy', []);
    const result = await app.waitFor(run.id, isSettled);
    expect(result.status).toBe(TaskStatus.QUARANTINED);
    expect(result.quarantine).toMatchObject({ reason: 'retry-policy-failed' });
    expect(result.quarantine!.message).toMatch(/threw RangeError: policy bug/);
    expect(result.errors).toEqual([expect.objectContaining({ errorClass: 'FixtureError', message: 'task failed' })]);
  });

  it('fails a NonRetryableError at once, without asking the retry policy', async () => {
    const app = await start({ worker: { concurrency: 1 } });
    const result = await app.waitFor((await app.queue.enqueue(PolicyService, 'declined', [])).id);
    expect(result).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect(result.errors[0]).toMatchObject({ errorClass: 'NonRetryableError', message: 'card declined' });
  });

  it('quarantines a run whose lease expired maxRecoveries times in a row; a worker outcome resets the count', async () => {
    const app = await start({ options: { leaseTtlMs: 150, maxRecoveries: 3 } });
    const registry = app.module.get(TaskRegistry);
    const broker = new Broker(app.backend, new TaskExecutor(registry), {
      queues: ['default'],
      intervalMs: 1_000,
      claimTtlMs: 5_000,
      maxRecoveries: 3,
    });
    // A task whose policy retries 5 times: the quarantine must come first.
    const run = await app.queue.enqueue('WitnessService.work', [1]);
    const recoveries = async () => app.backend.connections.client.hget(app.backend.keys.run(run.id), 'recoveries');
    /** Claims the run as soon as its backoff is over (the broker promotes it). */
    const claimWhenReady = async () => {
      for (let i = 0; i < 100; i++) {
        await broker.pass();
        const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
        if (leased?.id === run.id) return leased;
        await delay(20);
      }
      throw new Error('the run never became claimable');
    };
    /** Claims and starts the run, and lets its lease expire; the broker reaps it. */
    const claimAndExpire = async ({ started = true } = {}) => {
      const leased = await claimWhenReady();
      if (started) await app.backend.acknowledge([], [leased]);
      await delay(200);
      await broker.pass();
    };

    await claimAndExpire();
    expect(await recoveries()).toBe('1');
    // An attempt that ends with an outcome of its own breaks the series.
    const leased = await claimWhenReady();
    await app.backend.acknowledge([
      {
        id: run.id,
        queue: 'default',
        token: leased.token,
        outcome: { kind: 'retry', delayMs: 0, error: { errorClass: 'E', message: 'm', stack: 's', attempt: 2 } },
      },
    ]);
    expect(await recoveries()).toBeNull();

    await claimAndExpire();
    // A suspect that only waited (never started) when its worker died is not
    // blamed, nor charged an attempt: it goes back to READY as it was.
    const before = await app.queue.getResult(run.id);
    await claimAndExpire({ started: false });
    expect(await recoveries()).toBe('1');
    expect(await app.queue.getResult(run.id)).toMatchObject({ status: TaskStatus.READY, attempts: before.attempts });
    await claimAndExpire();
    expect(await recoveries()).toBe('2');
    await claimAndExpire();
    const result = await app.queue.getResult(run.id);
    expect(result.status).toBe(TaskStatus.QUARANTINED);
    expect(result.quarantine).toMatchObject({ reason: 'lease-expired-repeatedly' });
    expect(result.attempts).toBe(5);
    expect(result.errors.map((e) => e.errorClass)).toEqual([
      'AcknowledgementTimeoutError',
      'E',
      'AcknowledgementTimeoutError',
      'AcknowledgementTimeoutError',
      'AcknowledgementTimeoutError',
    ]);
  });

  it('lists segments in order and refuses to requeue what is not failed or quarantined', async () => {
    const app = await start();
    const inspector = app.module.get(TaskInspector);
    const low = await app.queue.enqueue(MathService, 'add', [1, 1], { priority: -1 });
    const high = await app.queue.enqueue(MathService, 'add', [2, 2], { priority: 5 });
    const mid = await app.queue.enqueue(MathService, 'add', [3, 3]);
    expect((await inspector.list('default', 'ready')).map((r) => r.id)).toEqual([high.id, mid.id, low.id]);
    expect((await inspector.list('default', 'ready', { offset: 1, limit: 1 })).map((r) => r.id)).toEqual([mid.id]);
    await expect(inspector.requeue(mid.id)).rejects.toThrow(
      /is READY; only FAILED, QUARANTINED or CANCELLED runs can be requeued/,
    );
    await expect(inspector.requeue('nope')).rejects.toThrow(TaskResultNotFoundError);
    // Queues of other applications are listable; a malformed name is refused.
    expect(await inspector.list('nowhere', 'ready')).toEqual([]);
    await expect(inspector.list('no such queue!', 'ready')).rejects.toThrow(InvalidInspectionError);
  });
});

describe('arguments validated at enqueue', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('validates DTO arguments, naming each bad field, and writes nothing', async () => {
    const app = await Harness.start();
    apps.push(app);
    const keys = async () => (await app.backend.connections.client.keys(`threadmill:{${app.alias}}:*`)).sort();
    const before = await keys();
    const error = await app.queue
      .enqueue(MailService, 'send', [{ to: 'nope', subject: '', attachments: [{ name: 'a.pdf', bytes: -1 }] }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidEnqueueError);
    expect((error as Error).message).toBe(
      'Cannot enqueue "MailService.send": its arguments are invalid: args[0] (SendEmailDto): to must be an email; ' +
        'subject must be longer than or equal to 1 characters; attachments.0.bytes must not be less than 0. ' +
        'Fix the arguments. Nothing was enqueued.',
    );
    await expect(app.queue.enqueue('MailService.send', ['just a string'])).rejects.toThrow(
      /args\[0\] \(SendEmailDto\) must be an object, got string/,
    );
    expect(await keys()).toEqual(before);
  });

  it('rehydrates valid DTO arguments as class instances before execution', async () => {
    const app = await Harness.start({ worker: { concurrency: 1 } });
    apps.push(app);
    const run = await app.queue.enqueue(MailService, 'send', [
      { to: 'ann@example.com', subject: 'Invoice', attachments: [{ name: 'a.pdf', bytes: 10 }] },
    ]);
    expect((await app.waitFor(run.id)).returnValue).toEqual({
      greeting: 'Invoice for ann@example.com with 1 attachment(s)',
      isInstance: true,
      attachmentIsInstance: true,
    });
  });

  it('refuses a payload over maxPayloadBytes and writes nothing', async () => {
    const app = await Harness.start({ options: { maxPayloadBytes: 1_000 } });
    apps.push(app);
    await expect(app.queue.enqueue('EchoService.echo', ['x'.repeat(2_000)])).rejects.toThrow(
      /its payload is 20\d\d bytes, over maxPayloadBytes \(1000\)\. Store large data elsewhere/,
    );
    expect((await app.queue.counts(['default']))[0]!.ready).toBe(0);
    expect((await app.queue.enqueue('EchoService.echo', ['x'.repeat(500)])).status).toBe(TaskStatus.READY);
  });
});
