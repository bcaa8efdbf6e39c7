import { Injectable, Module } from '@nestjs/common';
import {
  defineTask,
  EnqueueIncompleteError,
  InvalidEnqueueError,
  Task,
  TaskContext,
  TaskStatus,
} from '@threadmill/nestjs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FixtureTasksModule, MailService, SendEmailDto } from '../fixtures/fixture-tasks.js';
import { redisUrl } from '../support/backend.js';
import { Harness } from '../support/harness.js';

@Injectable()
class NotifyService {
  @Task()
  notify(userId: number, address: string): string {
    return `${userId} -> ${address}`;
  }

  @Task()
  greet(name: string, loud: boolean = false, context?: TaskContext): string {
    return `${loud ? 'HELLO' : 'hello'} ${name}${context ? '' : ' (no context)'}`;
  }

  @Task()
  sum(label: string, ...values: number[]): string {
    return `${label}=${values.reduce((a, b) => a + b, 0)}`;
  }

  @Task()
  tally(count: number, _context: TaskContext): number {
    return count;
  }
}

/** A contract whose task this application registers: its enqueues are checked against the method. */
const Remind = defineTask<[userId: number, at: string], string>('ArgumentChecks.remind');

@Injectable()
class RemindService {
  @Task(Remind)
  remind(userId: number, at: string): string {
    return `${userId} at ${at}`;
  }
}

@Module({ providers: [NotifyService, RemindService] })
class NotifyModule {}

describe('arguments are checked at enqueue against the task method', () => {
  let app: Harness;
  let redis: Redis;

  beforeAll(async () => {
    app = await Harness.start({ imports: [FixtureTasksModule, NotifyModule], worker: { concurrency: 2 } });
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    redis.disconnect();
    await app.close();
  });

  /** The run records of the harness's backend: nothing refused may add one. */
  const runKeys = () => redis.keys(`*{${app.alias}}:run:*`).then((found) => found.sort());

  /** Asserts `enqueue` is refused with a message matching each of `expected`, and writes nothing; returns the message. */
  async function refused(enqueue: () => Promise<unknown>, ...expected: RegExp[]): Promise<string> {
    const before = { runs: await runKeys(), counts: await app.queue.counts() };
    const error = await enqueue().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(InvalidEnqueueError);
    for (const pattern of expected) expect((error as Error).message).toMatch(pattern);
    expect({ runs: await runKeys(), counts: await app.queue.counts() }).toEqual(before);
    return (error as Error).message;
  }

  it('refuses a string for a number parameter, naming the task, the position and the type', async () => {
    expect(
      await refused(
        () => app.queue.enqueue('NotifyService.notify', ['not-a-number', 42]),
        /"NotifyService\.notify"/,
        /args\[0\] \(userId\) must be a number, got "not-a-number"/,
      ),
    ).toContain('Nothing was enqueued.');
    expect(
      await refused(
        () => app.queue.enqueue(NotifyService, 'notify', [1, 42 as unknown as string]),
        /args\[1\] \(address\) must be a string, got 42/,
      ),
    ).toContain('Nothing was enqueued.');
  });

  it('checks an enqueue through a contract against the method that serves it', async () => {
    expect(
      await refused(
        () => app.queue.enqueue(Remind, [1, 2 as unknown as string]),
        /"ArgumentChecks\.remind"/,
        /args\[1\] \(at\) must be a string, got 2/,
      ),
    ).toContain('Nothing was enqueued.');
    const run = await app.queue.enqueue(Remind, [1, 'noon']);
    expect((await app.waitFor(run.id)).returnValue).toBe('1 at noon');
  });

  it('refuses a missing argument and says how to make a parameter optional', async () => {
    expect(
      await refused(
        () => app.queue.enqueue('NotifyService.notify', [1]),
        /args\[1\] \(address\) is missing/,
        /takes 2 arguments, got 1/,
        /default value/,
      ),
    ).toContain('Nothing was enqueued.');
  });

  it('refuses an empty argument list for a DTO parameter', async () => {
    expect(
      await refused(
        () => app.queue.enqueue('MailService.send', []),
        /"MailService\.send"/,
        /args\[0\] \(email\) is missing/,
      ),
    ).toContain('Nothing was enqueued.');
    expect(
      await refused(
        () => app.queue.enqueue(MailService, 'send', [null as unknown as SendEmailDto]),
        /args\[0\] \(email\) must be a SendEmailDto object, got null/,
      ),
    ).toContain('Nothing was enqueued.');
  });

  it('refuses too many arguments, and a value in the place of the TaskContext', async () => {
    expect(
      await refused(
        () => app.queue.enqueue('NotifyService.notify', [1, 'a@example.com', 'extra']),
        /takes 2 arguments, got 3/,
      ),
    ).toContain('Nothing was enqueued.');
    expect(
      await refused(() => app.queue.enqueue('NotifyService.tally', [1, { attempt: 1 }]), /takes 1 argument, got 2/),
    ).toContain('Nothing was enqueued.');
  });

  it('accepts a parameter with a default value left out, and any number of rest arguments', async () => {
    const runs = await app.queue.enqueueMany([
      { task: 'NotifyService.greet', args: ['ada'] },
      { task: 'NotifyService.greet', args: ['ada', true] },
      { task: NotifyService, method: 'sum', args: ['none'] },
      { task: NotifyService, method: 'sum', args: ['three', 1, 2, 3] },
      { task: 'NotifyService.tally', args: [7] },
      { task: 'NotifyService.notify', args: [1, 'a@example.com'] },
    ]);
    const finished = await Promise.all(runs.map((run) => app.waitFor(run.id)));
    expect(finished.map((r) => r.status)).toEqual(Array(6).fill(TaskStatus.SUCCESSFUL));
    expect(finished.map((r) => r.returnValue)).toEqual([
      'hello ada',
      'HELLO ada',
      'none=0',
      'three=6',
      7,
      '1 -> a@example.com',
    ]);
    expect(
      await refused(() => app.queue.enqueue('NotifyService.greet', ['ada', 'yes']), /args\[1\] \(loud\)/),
    ).toContain('Nothing was enqueued.');
    expect(
      await refused(() => app.queue.enqueue('NotifyService.greet', []), /takes 1 to 2 arguments, got 0/),
    ).toContain('Nothing was enqueued.');
    expect(
      await refused(() => app.queue.enqueue('NotifyService.sum', []), /takes at least 1 argument, got 0/),
    ).toContain('Nothing was enqueued.');
  });

  it('refuses a whole enqueueMany, atomic or pipelined, when one item does not fit', async () => {
    const good = { task: 'NotifyService.notify', args: [1, 'a@example.com'] };
    expect(
      await refused(
        () => app.queue.enqueueMany([good, { task: 'NotifyService.notify', args: [1] }, good]),
        /"NotifyService\.notify \(item 1\)"/,
        /args\[1\] \(address\) is missing/,
      ),
    ).toContain('Nothing was enqueued.');
    // Pipelined calls store in chunks of 128: the bad item sits in a later chunk.
    const many = Array.from({ length: 300 }, () => good);
    many[290] = { task: 'MailService.send', args: [] };
    expect(
      await refused(
        () => app.queue.enqueueMany(many, { atomic: false }),
        /"MailService\.send \(item 290\)"/,
        /args\[0\] \(email\) is missing/,
      ),
    ).toContain('Nothing was enqueued.');
    const error = await app.queue.enqueueMany(many, { atomic: false }).catch((thrown: unknown) => thrown);
    expect(error).not.toBeInstanceOf(EnqueueIncompleteError);
  });
});
