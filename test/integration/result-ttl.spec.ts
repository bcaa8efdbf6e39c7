import { Controller, Injectable, Module } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { InvalidTaskError, Task, ThreadmillConfigError, ThreadmillModule, defineTask } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { Acknowledgement, Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { bootError } from '../support/boot.js';
import { Harness } from '../support/harness.js';

const SUCCESS: Outcome = { kind: 'successful', returnValue: undefined };
const FAILURE: Outcome = { kind: 'failed', error: { errorClass: 'Error', message: 'no', stack: '', attempt: 1 } };

/** Boots an application of `providers` on a module of `resultTtlMs`. */
async function boot(providers: unknown[], resultTtlMs?: unknown) {
  const module = await Test.createTestingModule({
    imports: [
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), resultTtlMs } as never),
      { module: class M {}, providers: providers as never[] },
    ],
  }).compile();
  module.useLogger(false);
  await module.init();
  return module;
}

/**
 * How the Redis backend keeps runs for different TTLs (docs/storage.md): the
 * runs of each outcome's default TTL in the queue's own finished indexes, as
 * before; those of a task's own TTL in one index per TTL class, registered
 * in the queue's `result-classes` set while the index holds runs.
 */
describe('result TTL classes in Redis', () => {
  /** The applications a test started; `app` is the last. */
  const apps: Harness[] = [];
  let app: Harness;
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((started) => started.close()));
  });
  const start = async (options: Parameters<typeof Harness.start>[0]) => {
    app = await Harness.start(options);
    apps.push(app);
  };

  /** Enqueues and leases one run per item, and acknowledges each with its outcome and TTL, in one call. */
  async function finish(items: readonly [Outcome, number | undefined][]): Promise<string[]> {
    for (let i = 0; i < items.length; i++) await app.queue.enqueue('MathService.add', [i, 1]);
    const runs = await app.backend.claim(['default'], items.length, 'host:1:0', 0);
    const acks: Acknowledgement[] = runs.map((run, i) => ({
      ...run,
      outcome: items[i]![0],
      ...(items[i]![1] === undefined ? {} : { resultTtlMs: items[i]![1] }),
    }));
    expect(await app.backend.acknowledge(acks)).toEqual(acks.map(() => true));
    return runs.map((run) => run.id);
  }
  const client = () => app.backend.connections.client;
  const key = (name: string) => `${app.backend.keys.prefix}q:default:${name}`;
  const indexKeys = async () =>
    (await client().keys(`${app.backend.keys.prefix}q:default:*`))
      .map((name) => name.slice(key('').length))
      .filter((name) => /^(successful|failed|result-classes)/.test(name))
      .sort();

  it("keeps the runs of each outcome's default TTL in the queue's own indexes, with no class", async () => {
    await start({ options: { resultTtlMs: { successful: 60_000, failed: 120_000 } } });
    // A task's TTL equal to its outcome's default is that default's class.
    await finish([
      [SUCCESS, undefined],
      [FAILURE, undefined],
      [SUCCESS, 60_000],
      [FAILURE, 120_000],
    ]);
    expect(await indexKeys()).toEqual(['failed', 'successful']);
    expect(await client().llen(key('successful'))).toBe(2);
    expect(await client().zcard(key('failed'))).toBe(2);
  });

  it("keeps a task's own TTL in its class's index until a trim finds it empty, and reports the next expiry", async () => {
    await start({ options: { resultTtlMs: 60_000 } });
    const [short, failedShort, long, plain] = await finish([
      [SUCCESS, 300],
      [FAILURE, 300],
      [SUCCESS, 90_000],
      [SUCCESS, undefined],
    ]);
    expect(await indexKeys()).toEqual([
      'failed:300',
      'result-classes',
      'successful',
      'successful:300',
      'successful:90000',
    ]);
    expect((await client().smembers(key('result-classes'))).sort()).toEqual([
      'failed:300',
      'successful:300',
      'successful:90000',
    ]);
    expect(await client().lrange(key('successful:300'), 0, -1)).toEqual([short]);
    expect(await client().zrange(key('failed:300'), 0, -1)).toEqual([failedShort]);
    expect(await client().lrange(key('successful:90000'), 0, -1)).toEqual([long]);
    expect(await client().lrange(key('successful'), 0, -1)).toEqual([plain]);

    await delay(400);
    const trimmedAt = Date.now();
    const { removed, nextExpiryAt } = await app.backend.trim(['default']);
    expect(removed).toBe(2);
    // The next expiry is the default index's run, a minute after it finished.
    expect(nextExpiryAt! - trimmedAt).toBeGreaterThan(58_000);
    expect(nextExpiryAt! - trimmedAt).toBeLessThanOrEqual(60_000);
    expect(await indexKeys()).toEqual(['result-classes', 'successful', 'successful:90000']);
    expect(await client().smembers(key('result-classes'))).toEqual(['successful:90000']);

    // The next acknowledgement of a class registers it again.
    await finish([[FAILURE, 300]]);
    expect((await client().smembers(key('result-classes'))).sort()).toEqual(['failed:300', 'successful:90000']);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ successful: 2, failed: 1 });

    expect(await app.backend.purge('default')).toBe(3);
    expect(await indexKeys()).toEqual([]);
  });

  describe('validation', () => {
    it('fails the boot for a module resultTtlMs that is not a TTL or one per outcome', async () => {
      const cases: [unknown, string][] = [
        [-1, '-1; resultTtlMs must be a whole number of ms, 0 or more (0: not kept)'],
        ['1d', "'1d'; resultTtlMs must be a number of ms, or one per outcome: { successful?: ms, failed?: ms }"],
        [{ succeeded: 5 }, '{ succeeded: 5 }; resultTtlMs names an unknown outcome "succeeded": the outcomes'],
        [{ failed: 1.5 }, '{ failed: 1.5 }; resultTtlMs.failed must be a whole number of ms, 0 or more'],
      ];
      for (const [value, problem] of cases) {
        const error = await boot([], value).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ThreadmillConfigError);
        expect((error as Error).message).toContain(`  - resultTtlMs: got ${problem}`);
      }
    });

    it('takes the TTL of a task bound to a contract from its binding, which the contract does not carry', async () => {
      const Audited = defineTask<[number], void>('ttl.audited', { queue: 'default' });
      @Injectable()
      class AuditedWorker {
        @Task(Audited, { resultTtlMs: { failed: 60_000 } })
        run(n: number): void {
          void n;
        }
      }
      @Module({ providers: [AuditedWorker] })
      class AuditedModule {}
      await start({ imports: [AuditedModule] });
      expect(app.module.get(TaskRegistry).find('ttl.audited')!.resultTtlMs).toEqual({
        successful: undefined,
        failed: 60_000,
      });
      expect(Audited.settings).not.toHaveProperty('resultTtlMs');
    });

    it("fails the boot naming a handler whose extras' resultTtlMs is not a TTL", async () => {
      @Controller()
      class BadHandler {
        @EventPattern('ttl.bad', { resultTtlMs: { failed: -1 } })
        handle(@Payload() value: number): number {
          return value;
        }
      }
      @Module({ controllers: [BadHandler] })
      class BadHandlerModule {}
      const error = await bootError([BadHandlerModule], { server: true });
      expect(error).toBeInstanceOf(InvalidTaskError);
      expect((error as Error).message).toMatch(
        /@EventPattern\(\) on BadHandler#handle \(pattern ttl.bad\): resultTtlMs.failed must be a whole number of ms/,
      );
    });

    it('fails the boot naming the task whose resultTtlMs is not a TTL or one per outcome', async () => {
      @Injectable()
      class WithBadTtl {
        @Task({ resultTtlMs: { successful: -5 } })
        run(): void {}
      }
      const error = await boot([WithBadTtl]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidTaskError);
      expect((error as Error).message).toBe(
        'Invalid @Task() on WithBadTtl#run: resultTtlMs.successful must be a whole number of ms, 0 or more ' +
          '(0: not kept), got {"successful":-5}.',
      );
    });
  });
});
