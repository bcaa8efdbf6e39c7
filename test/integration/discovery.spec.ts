import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DuplicateTaskError,
  InvalidTaskError,
  RedisUnavailableError,
  Task,
  TaskQueue,
  ThreadmillConfigError,
  ThreadmillModule,
  type ThreadmillModuleOptions,
  type ThreadmillOptionsFactory,
} from '@threadmill/nestjs';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES, MathService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';

async function boot(imports: unknown[]) {
  const module = await Test.createTestingModule({ imports: imports as never[] }).compile();
  module.useLogger(false);
  await module.init();
  return module;
}

@Injectable()
class BillingA {
  @Task({ name: 'charge' })
  charge(): void {}
}

@Injectable()
class BillingB {
  @Task({ name: 'charge' })
  chargeAgain(): void {}
}

@Injectable()
class OnUnknownQueue {
  @Task({ queue: 'nowhere' })
  run(): void {}
}

@Injectable()
class WithBadPriority {
  @Task({ priority: 500 })
  run(): void {}
}

@Injectable()
class WithMisspeltOptions {
  @Task({ nmae: 'charge', retries: 3 } as never)
  run(): void {}
}

@Injectable()
class WithMisspeltBackend {
  @Task({ backedn: 'billing' } as never)
  run(): void {}
}

@Injectable()
class WithLongLease {
  @Task({ leaseTtlMs: 2 * 86_400_000 })
  run(): void {}
}

@Injectable()
class WithEveryOption {
  @Task({
    name: 'every.option',
    backend: 'default',
    queue: 'default',
    priority: 5,
    retry: () => null,
    leaseTtlMs: 5_000,
    timeoutMs: 1_000,
    resultTtlMs: { failed: 60_000 },
    schedule: { everyMs: 3_600_000 },
    limit: { concurrency: 2 },
  })
  run(): void {}
}

describe('boot-time validation', () => {
  it('fails the boot naming both sites of a duplicate task name', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [BillingA, BillingB] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DuplicateTaskError);
    expect((error as Error).message).toBe(
      'Task name "charge" is declared twice: by BillingA#charge and by BillingB#chargeAgain. ' +
        "Give one of them a distinct name with @Task({ name: '...' }).",
    );
  });

  it('fails the boot for a task on an undeclared queue, naming its site', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [OnUnknownQueue] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /OnUnknownQueue#run: queue "nowhere" is not one of the module's queues \(default\)/,
    );
  });

  it('fails the boot for a task priority out of range', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [WithBadPriority] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /WithBadPriority#run: priority must be an integer from -100 to 100, got 500/,
    );
  });

  it('fails the boot for an option @Task() does not take, naming the task, the key, the closest valid key and all of them', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [WithMisspeltOptions] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toBe(
      'Invalid @Task() on WithMisspeltOptions#run: unknown option "nmae" (did you mean "name"?); ' +
        'unknown option "retries" (did you mean "retry"?). Valid options of @Task(): name, backend, queue, ' +
        'priority, retry, leaseTtlMs, timeoutMs, resultTtlMs, schedule, limit.',
    );
  });

  it('names a misspelt backend as such, not as a task of an undeclared backend', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), name: 'billing' }),
      { module: class M {}, providers: [WithMisspeltBackend] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /^Invalid @Task\(\) on WithMisspeltBackend#run: unknown option "backedn" \(did you mean "backend"\?\)\./,
    );
  });

  it("holds a task's leaseTtlMs to the module's rule for leaseTtlMs", async () => {
    const error = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [WithLongLease] },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toBe(
      'Invalid @Task() on WithLongLease#run: leaseTtlMs must not be greater than 86400000 (ms), got 172800000.',
    );
    // The same value refused by forRoot, with the same rule.
    const moduleError = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), leaseTtlMs: 2 * 86_400_000 }),
    ]).catch((e: unknown) => e);
    expect((moduleError as Error).message).toContain('leaseTtlMs must not be greater than 86400000 (rule: max)');
  });

  it('boots a task that gives every option @Task() takes', async () => {
    const module = await boot([
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() }),
      { module: class M {}, providers: [WithEveryOption] },
    ]);
    expect((await module.get(TaskQueue).enqueue('every.option', [])).queue).toBe('default');
    await module.close();
  });

  it('fails the boot with one line per bad option: field, value and rule', async () => {
    const error = await boot([
      ThreadmillModule.forRoot({
        connection: 'http://nope',
        alias: 'has spaces',
        leaseTtlMs: -5,
        queues: [],
        leaseTTL: 5,
      } as ThreadmillModuleOptions),
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadmillConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/^Invalid Threadmill options \(5 problems\):/);
    expect(message).toContain(
      `  - connection: got 'http://nope'; connection must be a redis://, rediss:// or unix:// URL`,
    );
    expect(message).toContain(`  - alias: got 'has spaces'; alias must be 1-64 characters`);
    expect(message).toContain('  - leaseTtlMs: got -5; leaseTtlMs must not be less than 100 (rule: min)');
    expect(message).toContain('  - queues: got []; queues should not be empty (rule: arrayNotEmpty)');
    expect(message).toContain('  - leaseTTL: unknown option (given 5); remove it or check its spelling');
  });

  it('masks the user and password of a URL it refuses, whatever field holds it', async () => {
    const long = `redis://ops:${'s3cret'.repeat(20)}@cache.internal:6379/0`;
    const error = await boot([
      ThreadmillModule.forRoot({
        connection: 'http://:s3cret@cache.internal:6379',
        alias: long,
        queues: ['redis://ops:s3cret@cache.internal'],
      }),
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadmillConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`  - connection: got 'http://:***@cache.internal:6379'; connection must be a redis://`);
    expect(message).toContain(`  - alias: got 'redis://***:***@cache.internal:6379/0'; alias must be`);
    expect(message).toContain(`  - queues: got [ 'redis://***:***@cache.internal' ]; each queue name must be`);
    expect(message).not.toMatch(/s3cret/);

    // A URL the parser refuses fails here, masked, not in ioredis, whose error would carry it whole.
    const malformed = await boot([ThreadmillModule.forRoot({ connection: 'redis://:s3cret@[cache:6379' })]).catch(
      (e: unknown) => e,
    );
    expect(malformed).toBeInstanceOf(ThreadmillConfigError);
    expect(inspect(malformed)).toContain(
      `  - connection: got 'redis://:***@[cache:6379'; connection is not a valid URL; percent-encode "@", "/", ":", "#" and "%" in its user and password`,
    );
    expect(inspect(malformed)).not.toMatch(/s3cret/);
  });

  it('configures with forRootAsync and a factory', async () => {
    const alias = uniqueAlias();
    @Module({ providers: [{ provide: 'REDIS_URL', useValue: redisUrl() }], exports: ['REDIS_URL'] })
    class ConfigModule {}
    const module = await boot([
      ThreadmillModule.forRootAsync({
        imports: [ConfigModule],
        inject: ['REDIS_URL'],
        useFactory: (url: string) => ({ connection: url, alias, queues: FIXTURE_QUEUES }),
      }),
      { module: class M {}, providers: [MathService] },
    ]);
    const result = await module.get(TaskQueue).enqueue(MathService, 'add', [1, 2]);
    expect(result.taskName).toBe('MathService.add');
    await module.close();
  });

  it('configures with forRootAsync and an options class', async () => {
    const alias = uniqueAlias();
    class Options implements ThreadmillOptionsFactory {
      createThreadmillOptions(): ThreadmillModuleOptions {
        return { connection: redisUrl(), alias, queues: FIXTURE_QUEUES };
      }
    }
    const module = await boot([
      ThreadmillModule.forRootAsync({ useClass: Options }),
      { module: class M {}, providers: [MathService] },
    ]);
    expect((await module.get(TaskQueue).enqueue('MathService.add', [1, 2])).status).toBe('READY');
    await module.close();
  });

  it('fails the boot with a clear message when Redis does not answer', async () => {
    const started = Date.now();
    const error = await boot([
      ThreadmillModule.forRoot({ connection: 'redis://127.0.0.1:1', alias: uniqueAlias(), connectTimeoutMs: 500 }),
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(
      /^Cannot reach Redis at 127\.0\.0\.1:1\/0: .*\. Start a Redis server reachable at 127\.0\.0\.1:1 \(redis-server, or your platform's Redis\), or fix the `connection` option\.$/,
    );
    expect((error as Error).message).not.toMatch(/docker/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
