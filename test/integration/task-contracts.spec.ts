import { Controller, Injectable, Module, Scope } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { InvalidTaskError, Task, TaskQueue, TaskStatus, defineTask, type TaskResult } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { BuildReport, ContractTasksModule, SendWelcome } from '../fixtures/fixture-contracts.js';
import { uniqueAlias } from '../support/backend.js';
import { bootError } from '../support/boot.js';
import { Harness } from '../support/harness.js';

/**
 * Compile-time checks, run by `npm run typecheck` (never called): a contract
 * types what its producers pass and what its worker's method takes.
 */
export function contractTypes(tasks: TaskQueue): void {
  void tasks.enqueue(SendWelcome, [7, 'ada@example.com']);
  // @ts-expect-error the user id is a number
  void tasks.enqueue(SendWelcome, ['7', 'ada@example.com']);
  // @ts-expect-error the email is missing
  void tasks.enqueue(SendWelcome, [7]);
  const report: Promise<TaskResult<{ month: string; rows: number }>> = tasks.enqueue(BuildReport, [{ month: 'may' }]);
  void report;

  class Worker {
    @Task(SendWelcome)
    matches(userId: number, email: string): string {
      return `${userId}${email}`;
    }

    // @ts-expect-error the method takes a string where the contract passes a number
    @Task(SendWelcome)
    wrongArgument(userId: string, email: string): string {
      return userId + email;
    }

    // @ts-expect-error the method returns a number where the contract promises a string
    @Task(SendWelcome)
    wrongReturn(userId: number): number {
      return userId;
    }
  }
  void Worker;
}

describe('task contracts', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it("lets a producer with none of the worker's providers enqueue typed, stored as the contract says", async () => {
    const alias = uniqueAlias();
    // The producer's container holds Threadmill and nothing else: no task is registered there.
    const producer = await Harness.start({ options: { alias }, imports: [] });
    apps.push(producer);
    const stored = await producer.queue.enqueue(SendWelcome, [7, 'ada@example.com']);
    expect(stored).toMatchObject({
      taskName: 'contracts.sendWelcome',
      queue: 'emails',
      priority: 5,
      args: [7, 'ada@example.com'],
    });

    const worker = await Harness.start({ options: { alias }, imports: [ContractTasksModule], worker: {} });
    apps.push(worker);
    expect(await producer.waitFor(stored.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 'welcome 7 ada@example.com (attempt 1)',
    });
    const report = await producer.queue.enqueue(BuildReport, [{ month: 'march' }]);
    expect(report.queue).toBe('reports');
    expect(await producer.waitFor(report.id)).toMatchObject({ returnValue: { month: 'march', rows: 5 } });
  });

  it("stores a contract's lease with its runs", async () => {
    const producer = await Harness.start({ imports: [] });
    apps.push(producer);
    const stored = await producer.queue.enqueue(BuildReport, [{ month: 'june' }]);
    const record = await producer.backend.load(stored.id);
    expect(record).toMatchObject({ leaseTtl: '60000' });
  });

  it("enqueues another application's task by name, into the queue it is given or 'default'", async () => {
    const producer = await Harness.start({ imports: [] });
    apps.push(producer);
    expect(await producer.queue.enqueue('billing.charge', [42])).toMatchObject({ queue: 'default', priority: 0 });
    expect(await producer.queue.enqueue('billing.charge', [42], { queue: 'reports' })).toMatchObject({
      queue: 'reports',
    });
    // A name that a contract of this process defines takes the contract's queue.
    expect(await producer.queue.enqueue('contracts.sendWelcome', [1, 'a@b.c'])).toMatchObject({ queue: 'emails' });
  });

  it('binds @Task(contract) to the contract: its name, queue, priority and lease', async () => {
    const worker = await Harness.start({ imports: [ContractTasksModule] });
    apps.push(worker);
    const stored = await worker.queue.enqueue('contracts.sendWelcome', [1, 'x@y.z']);
    expect(stored).toMatchObject({ queue: 'emails', priority: 5 });
  });

  it('fails the boot of a worker whose task disagrees with the contract of its name, naming both', async () => {
    const Mismatched = defineTask<[string], void>('contracts.mismatch', { queue: 'emails' });
    void Mismatched;
    @Injectable()
    class Drifted {
      @Task({ name: 'contracts.mismatch', queue: 'reports' })
      run(value: string): string {
        return value;
      }
    }
    @Module({ providers: [Drifted] })
    class DriftedModule {}
    const error = await bootError([DriftedModule]);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /Drifted#run: it disagrees with contract "contracts.mismatch" \(defineTask\) on queue "emails" vs "reports"/,
    );
  });

  it('fails the boot of a worker whose handler disagrees with the contract of its pattern', async () => {
    defineTask<[number], void>('contracts.handler', { queue: 'emails' });
    @Controller()
    class DriftedHandler {
      @EventPattern('contracts.handler', { queue: 'default' })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [DriftedHandler] })
    class DriftedHandlerModule {}
    const error = await bootError([DriftedHandlerModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /@EventPattern\(\) on DriftedHandler#handle: it disagrees with contract "contracts.handler" \(defineTask\) on queue "emails" vs "default"/,
    );
  });

  it('refuses a second, different definition of a contract, and returns the first for the same one', () => {
    const first = defineTask<[number], void>('contracts.twice', { queue: 'emails' });
    expect(defineTask<[number], void>('contracts.twice', { queue: 'emails' })).toBe(first);
    expect(() => defineTask<[number], void>('contracts.twice', { queue: 'reports' })).toThrow(
      /defined twice, and the definitions disagree: queue "emails" vs "reports"/,
    );
    expect(() => defineTask('', {})).toThrow(InvalidTaskError);
    expect(() => defineTask('contracts.bad', { priority: 1000 })).toThrow(
      /priority must be an integer from -100 to 100/,
    );
  });

  it("refuses an option a contract does not take: a misspelt one, and the worker's own, saying where it goes", () => {
    expect(() => defineTask('contracts.misspelt', { queu: 'emails' } as never)).toThrow(
      'Invalid defineTask() on contract "contracts.misspelt": unknown option "queu" (did you mean "queue"?). ' +
        'Valid options of defineTask(): backend, queue, priority, leaseTtlMs.',
    );
    expect(() => defineTask('contracts.retried', { retry: () => 1_000 } as never)).toThrow(
      /option "retry" does not apply here: it concerns only the worker: give it where the worker binds the task, @Task\(contract, \{ retry \}\)/,
    );
  });

  it('refuses at boot an option of a bound task that its contract fixes, and a misspelt one', async () => {
    const Fixed = defineTask<[number], void>('contracts.fixed', { queue: 'emails' });
    @Injectable()
    class Rerouted {
      @Task(Fixed, { queue: 'default', retires: 2 } as never)
      run(_value: number): void {}
    }
    @Module({ providers: [Rerouted] })
    class ReroutedModule {}
    const error = await bootError([ReroutedModule]);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toBe(
      'Invalid @Task(contract, options) on Rerouted#run: option "queue" does not apply here: contract ' +
        '"contracts.fixed" fixes it for its producers and this worker alike; set it in its defineTask(); ' +
        'unknown option "retires" (did you mean "retry"?). Valid options of @Task(contract, options): retry, ' +
        'resultTtlMs, timeoutMs, limit.',
    );
  });

  it('refuses a task on a request-scoped provider at boot, saying why and what to do', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @Task()
      run(): void {}
    }
    @Module({ providers: [PerRequest] })
    class PerRequestModule {}
    const error = await bootError([PerRequestModule]);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(/PerRequest#run: its provider is request-scoped.*A run has no request/);
    expect((error as Error).message).toMatch(/ContextIdFactory\.create\(\)/);
  });
});
