import {
  StorageLayoutError,
  TaskInspector,
  TaskResultNotFoundError,
  TaskStatus,
  createInspector,
  type TaskResult,
} from '@threadmill/nestjs';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnections } from '../../libs/threadmill/src/backend/redis/redis-connections.js';
import { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { STORAGE_LAYOUT } from '../../libs/threadmill/src/backend/redis/storage-layout.js';
import { recorded } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import {
  LAYOUT_ONE,
  copyKeys,
  dumpsOf,
  keysOf,
  prefixOf,
  restoreLayoutOne,
  stateOf,
} from '../support/layout-fixture.js';
import { handWritten, successfulIds } from '../support/stored-payload.js';
import { waitUntil } from '../support/wait.js';

const { runs, leases } = LAYOUT_ONE;
/** Long enough for an application to boot and be looked at before the fixture's leases expire. */
const LEASES_EXPIRE_MS = 2_000;
const OPTIONS = { leaseTtlMs: 1_000, resultTtlMs: LAYOUT_ONE.resultTtlMs };
/** One run at a time, claimed one at a time: runs start in ready order. */
const WORKER = { concurrency: 1, prefetch: 0 };

/** Layout 1's lease value with layout 2's started flag: `token|claimedAt|attempt|recoveries|started|worker`. */
function withStarted(value: string, started: 0 | 1): string {
  const parts = value.split('|');
  return [...parts.slice(0, 4), started, ...parts.slice(4)].join('|');
}

/** A refusal to touch keys of the next layout, naming both layouts and what to do. */
function expectRefusal(error: unknown): void {
  expect(error).toBeInstanceOf(StorageLayoutError);
  expect(error).toMatchObject({ found: STORAGE_LAYOUT + 1, supported: STORAGE_LAYOUT });
  const { message } = error as StorageLayoutError;
  expect(message).toContain(`storage layout ${STORAGE_LAYOUT + 1}`);
  expect(message).toContain(`reads layout ${STORAGE_LAYOUT} and older`);
  expect(message).toMatch(/Upgrade @threadmill\/nestjs in this application/);
}

describe('storage layout versions and upgrades', () => {
  let redis: Redis;
  const apps: Harness[] = [];
  const backends: RedisTaskBackend[] = [];

  beforeAll(() => {
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await redis.quit();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await Promise.all(backends.splice(0).map((backend) => backend.connections.close()));
  });

  async function start(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const app = await Harness.start(...args);
    apps.push(app);
    return app;
  }

  /** A backend instance of its own (connections included) over `alias`, as another process has. */
  function backendOf(alias: string): RedisTaskBackend {
    const backend = new RedisTaskBackend(new RedisConnections(redisUrl(), alias, 5_000), {
      alias,
      ...OPTIONS,
      batchSize: 100,
    });
    backends.push(backend);
    return backend;
  }

  /**
   * The fixture's keys, marked as written by a newer version; and their
   * DUMPs. Their leases have expired and runs are ready: a worker that went
   * ahead would write at once.
   */
  async function newerKeys(): Promise<{ alias: string; dumps: Record<string, string> }> {
    const alias = uniqueAlias('layout');
    await restoreLayoutOne(redis, alias, { leasesExpireInMs: 0 });
    await redis.set(`${prefixOf(alias)}layout`, String(STORAGE_LAYOUT + 1));
    return { alias, dumps: await dumpsOf(redis, alias) };
  }

  it('a boot upgrades keys of layout 1, and every run they hold goes on as it would have', async () => {
    const alias = uniqueAlias('layout');
    const prefix = prefixOf(alias);
    await restoreLayoutOne(redis, alias, { leasesExpireInMs: LEASES_EXPIRE_MS });
    recorded.length = 0;
    const app = await start({ options: { alias, ...OPTIONS }, worker: WORKER });

    expect(await redis.get(`${prefix}layout`)).toBe(String(STORAGE_LAYOUT));
    // Only the suspect recorded its start under its lease; the others are held.
    expect(await redis.hgetall(`${prefix}leases`)).toMatchObject({
      suspect: withStarted(leases['suspect']!, 1),
      held: withStarted(leases['held']!, 0),
      reaped: withStarted(leases['reaped']!, 0),
      inbox: withStarted(leases['inbox']!, 0),
    });
    expect(await redis.exists(LAYOUT_ONE.idleRegistrations.map((queue) => `${prefix}q:${queue}:idle`))).toBe(0);

    const results: Record<string, TaskResult> = {};
    const pending = [
      ...runs.ready.default,
      ...runs.ready.emails,
      ...runs.deferredPast,
      ...runs.held,
      ...runs.reaped,
      ...runs.inbox,
      ...runs.suspect,
    ];
    for (const id of pending) results[id] = await app.waitFor(id);
    for (const id of pending) expect(results[id]!.status, id).toBe(TaskStatus.SUCCESSFUL);

    // Higher priority first, FIFO within a priority, list and set merged by
    // score, past the dead places of dequeued runs.
    expect(recorded).toEqual(runs.ready.default);
    for (const id of runs.ready.default.filter((ready) => !runs.retried.includes(ready))) {
      expect(results[id], id).toMatchObject({ attempts: 1, errors: [] });
    }
    expect(results['retried']).toMatchObject({ attempts: 2, errors: [{ message: 'the first attempt failed' }] });
    expect(results['deferred-past']!.returnValue).toBe(9);
    // Leases whose attempt never started come back uncharged: held, delivered
    // to an inbox, or claimed by a broker of layout 1 that never settled it.
    expect(results['held']).toMatchObject({ attempts: 1, errors: [], returnValue: 30 });
    expect(results['reaped']).toMatchObject({ attempts: 1, errors: [], returnValue: 11 });
    expect(results['inbox']).toMatchObject({ attempts: 1, errors: [], queue: 'emails' });
    // The suspect's started attempt is charged: a second AcknowledgementTimeoutError.
    expect(results['suspect']).toMatchObject({ attempts: 3, returnValue: 'succeeded on attempt 3' });
    expect(results['suspect']!.errors.map((e) => [e.errorClass, e.attempt])).toEqual([
      ['AcknowledgementTimeoutError', 1],
      ['AcknowledgementTimeoutError', 2],
    ]);

    for (const id of runs.dequeued) await expect(app.queue.getResult(id)).rejects.toThrow(TaskResultNotFoundError);
    const [future] = runs.deferredFuture;
    expect(await app.queue.getResult(future!)).toMatchObject({
      status: TaskStatus.READY,
      runAfter: new Date(LAYOUT_ONE.farFuture),
    });
    expect(Number(await redis.zscore(`${prefix}q:default:deferred`, future!))).toBe(LAYOUT_ONE.farFuture);

    // Finished runs keep their result, their index entry and their TTL.
    const [ok] = runs.successful;
    expect(await app.queue.getResult(ok!)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 3 });
    expect(await successfulIds(redis, `${prefix}q:default:successful`)).toContain(ok);
    expect(await redis.pttl(`${prefix}run:${ok}`)).toBeGreaterThan(0);

    // A failed run of layout 1 has a TTL: requeued, it loses it, and runs.
    const inspector = app.module.get(TaskInspector);
    const [failed] = runs.failed;
    expect(await app.queue.getResult(failed!)).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    await inspector.requeue(failed!);
    expect(await redis.pttl(`${prefix}run:${failed}`)).toBe(-1);
    expect(await app.waitFor(failed!)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      attempts: 2,
      returnValue: 'failed once',
    });
    const [quarantined] = runs.quarantined;
    expect(await app.queue.getResult(quarantined!)).toMatchObject({ status: TaskStatus.QUARANTINED, attempts: 1 });
    await inspector.requeue(quarantined!);
    expect(await app.waitFor(quarantined!)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 5 });

    expect(await app.queue.counts(['default', 'emails'])).toMatchObject([
      { queue: 'default', ready: 0, deferred: 1, running: 0, quarantined: 0 },
      { queue: 'emails', ready: 0, deferred: 0, running: 0 },
    ]);
  });

  it('finished runs of layout 1 stay readable until their result TTL, then leave with their index entry', async () => {
    const alias = uniqueAlias('layout');
    const prefix = prefixOf(alias);
    const finished = [...runs.successful, ...runs.failed];
    // The keys as they stood two seconds before their finished runs expire.
    await restoreLayoutOne(redis, alias, { leasesExpireInMs: 500, ageMs: LAYOUT_ONE.finishedTtlMs - 2_000 });
    const app = await start({ options: { alias, ...OPTIONS }, worker: WORKER });

    for (const id of finished) expect((await app.queue.getResult(id)).finishedAt).not.toBeNull();
    await waitUntil(
      'the finished runs of layout 1 are removed',
      async () => (await redis.exists(finished.map((id) => `${prefix}run:${id}`))) === 0,
    );
    for (const id of finished) await expect(app.queue.getResult(id)).rejects.toThrow(TaskResultNotFoundError);
    const [ok, failed] = [runs.successful[0]!, runs.failed[0]!];
    await waitUntil(
      'their index entries are removed',
      async () =>
        !(await successfulIds(redis, `${prefix}q:default:successful`)).includes(ok) &&
        (await redis.zscore(`${prefix}q:default:failed`, failed)) === null,
    );
    // Meanwhile the held runs came back and ran.
    for (const id of [...runs.held, ...runs.reaped]) {
      expect(await app.waitFor(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1 });
    }
  });

  it('processes that boot together upgrade the keys once, as one process would', async () => {
    const once = uniqueAlias('layout');
    const together = uniqueAlias('layout');
    await restoreLayoutOne(redis, once, { leasesExpireInMs: 60_000 });
    await copyKeys(redis, once, together);

    await backendOf(once).prepare();
    await Promise.all([1, 2, 3, 4, 5].map(() => backendOf(together).prepare()));
    const upgraded = await stateOf(redis, once);
    expect(await stateOf(redis, together)).toEqual(upgraded);
    expect(upgraded).toMatchObject({ layout: { type: 'string', value: String(STORAGE_LAYOUT) } });
    expect(await redis.hgetall(`${prefixOf(together)}leases`)).toEqual({
      suspect: withStarted(leases['suspect']!, 1),
      held: withStarted(leases['held']!, 0),
      reaped: withStarted(leases['reaped']!, 0),
      inbox: withStarted(leases['inbox']!, 0),
    });
    // Booting again changes nothing; nor does the step itself, run again on its own output.
    await Promise.all([backendOf(together).prepare(), backendOf(together).prepare()]);
    expect(await stateOf(redis, together)).toEqual(upgraded);
    await redis.del(`${prefixOf(together)}layout`);
    await backendOf(together).prepare();
    expect(await stateOf(redis, together)).toEqual(upgraded);
  });

  it('reads a lease a worker of layout 1 still writes after the upgrade as held, and reaps it', async () => {
    const alias = uniqueAlias('layout');
    const backend = backendOf(alias);
    await backend.prepare();
    const id = 'straggler';
    await backend.store([handWritten(id, '{"v":1,"task":"MathService.add","args":[1,2]}')]);
    const [leased] = await backend.claim(['default'], 1, 'v2:1:0', 0);
    // A layout-1 worker's lease, five fields, expired.
    await redis.hset(`${prefixOf(alias)}leases`, id, `99|${leased!.claimedAt}|1|0|"v1-host:1:0"`);
    await redis.zadd(`${prefixOf(alias)}q:default:running`, 'XX', 1, id);
    const reaped = await backend.reap(['default'], 5_000, 3);
    expect({ returned: reaped.returned, claimed: reaped.runs }).toEqual({ returned: 1, claimed: [] });
    expect((await backend.counts(['default']))[0]).toMatchObject({ ready: 1, running: 0 });
  });

  it('a boot takes keys of layout 2 to layout 4: successes kept in run hashes read as before, new ones are done records, the successful index a list of ids', async () => {
    const alias = uniqueAlias('layout');
    const prefix = prefixOf(alias);
    // A success as layout 2 kept it: a run hash and its index entry.
    const finishedAt = Date.now() - 1_000;
    await redis.hset(`${prefix}run:old`, {
      payload: '{"v":1,"task":"MathService.add","args":[1,2]}',
      queue: 'default',
      score: '1',
      enqueuedAt: String(finishedAt - 100),
      status: 'SUCCESSFUL',
      finishedAt: String(finishedAt),
      result: '3',
      attempts: '1',
      lastAttemptedAt: String(finishedAt - 50),
      startedAt: String(finishedAt - 50),
      workers: '"host:1:0"',
    });
    await redis.zadd(`${prefix}q:default:successful`, finishedAt, 'old');
    await redis.set(`${prefix}seq`, '1');
    await redis.set(`${prefix}layout`, '2');

    const app = await start({ options: { alias, ...OPTIONS }, worker: WORKER });
    expect(await redis.get(`${prefix}layout`)).toBe('4');
    expect(await app.queue.getResult('old')).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 3,
      workerIds: ['host:1:0'],
    });
    const added = await app.queue.enqueue('MathService.add', [2, 3]);
    expect(await app.waitFor(added.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 5 });
    expect(await redis.hexists(`${prefix}done`, added.id)).toBe(1);
    // The successful index became a list of ids in finish order: the old run's entry first.
    expect(await redis.lrange(`${prefix}q:default:successful`, 0, -1)).toEqual(['old', added.id]);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ successful: 2 });
    expect((await app.module.get(TaskInspector).list('default', 'successful')).map((run) => run.id)).toEqual([
      added.id,
      'old',
    ]);
  });

  it('a boot takes keys of layout 3 to layout 4: index entries lose their finish time, done records of either form read the same and leave on time', async () => {
    const alias = uniqueAlias('layout');
    const prefix = prefixOf(alias);
    const payload = '{"v":1,"task":"MathService.add","args":[1,2]}';
    const now = Date.now();
    // Layout 3: a done record holds its claim time itself; an index entry is `finishedAt|id`.
    // 'expired' finished past the result TTL, 'kept' recently, 'hashed' (a run hash) in between.
    const expiredAt = now - OPTIONS.resultTtlMs - 1_000;
    const keptAt = now - 1_000;
    const worker = '"host:1:0"';
    const doneOf = (finishedAt: number, claimedAt: number, result: string) =>
      `${finishedAt}|${claimedAt}|1|${worker.length}|${result.length}|${worker}${result}${finishedAt - 200}|1|||default|${payload}`;
    await redis.hset(`${prefix}done`, {
      expired: doneOf(expiredAt, expiredAt - 40, '3'),
      kept: doneOf(keptAt, keptAt - 40, '3'),
    });
    await redis.hset(`${prefix}run:hashed`, {
      payload,
      queue: 'default',
      score: '2',
      enqueuedAt: String(keptAt - 600),
      status: 'SUCCESSFUL',
      finishedAt: String(keptAt - 500),
      result: '3',
      attempts: '2',
      lastAttemptedAt: String(keptAt - 550),
      workers: `${worker},${worker}`,
    });
    await redis.rpush(
      `${prefix}q:default:successful`,
      `${expiredAt}|expired`,
      `${keptAt - 500}|hashed`,
      `${keptAt}|kept`,
    );
    await redis.set(`${prefix}seq`, '3');
    await redis.set(`${prefix}layout`, '3');

    const app = await start({ options: { alias, ...OPTIONS }, worker: WORKER });
    expect(await redis.get(`${prefix}layout`)).toBe('4');
    // A layout-3 done record reads as it did: its claim time is its own.
    expect(await app.queue.getResult('kept')).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 3,
      startedAt: new Date(keptAt - 40),
      finishedAt: new Date(keptAt),
    });
    expect(await app.queue.getResult('hashed')).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 2 });
    // A new success writes the relative form, and reads back the same times.
    const added = await app.queue.enqueue('MathService.add', [2, 3]);
    const result = await app.waitFor(added.id);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 5 });
    expect(await redis.hget(`${prefix}done`, added.id)).toMatch(/^\d{13}\|\+\d{1,6}\|1\|/);
    expect(result.startedAt!.getTime()).toBeLessThanOrEqual(result.finishedAt!.getTime());
    expect(await app.queue.getResult(added.id)).toEqual(result);
    // The acknowledgement trimmed the expired run by the finish time of its
    // record: entries are ids, in finish order.
    expect(await redis.lrange(`${prefix}q:default:successful`, 0, -1)).toEqual(['hashed', 'kept', added.id]);
    expect(await redis.hexists(`${prefix}done`, 'expired')).toBe(0);
    await expect(app.queue.getResult('expired')).rejects.toThrow(TaskResultNotFoundError);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ successful: 3 });
  });

  it('the upgrade to layout 4 cuts each entry of a long successful list to its id, page by page, in order', async () => {
    const alias = uniqueAlias('layout');
    const prefix = prefixOf(alias);
    // More entries than a page of the rotation (1,000), an id holding '|' among them.
    const ids = Array.from({ length: 2_500 }, (_, i) => (i === 1_234 ? 'a|b' : `run-${i}`));
    const finishedAt = Date.now() - 1_000;
    for (let from = 0; from < ids.length; from += 500) {
      await redis.rpush(
        `${prefix}q:default:successful`,
        ...ids.slice(from, from + 500).map((id, i) => `${finishedAt + from + i}|${id}`),
      );
    }
    await redis.set(`${prefix}seq`, '1');
    await redis.set(`${prefix}layout`, '3');

    const inspector = await createInspector({ connection: redisUrl(), alias });
    await inspector.close();
    expect(await redis.get(`${prefix}layout`)).toBe('4');
    expect(await redis.lrange(`${prefix}q:default:successful`, 0, -1)).toEqual(ids);
  });

  it('an empty keyspace is marked with the current layout at its first boot', async () => {
    const alias = uniqueAlias('layout');
    await start({ options: { alias } });
    const prefix = prefixOf(alias);
    // And the limits of the fixtures' tasks that declare one (`LimitedService`), written at bootstrap.
    expect(await keysOf(redis, alias)).toEqual([`${prefix}layout`, `${prefix}queues`, `${prefix}task-limits`]);
    expect(await redis.get(`${prefix}layout`)).toBe(String(STORAGE_LAYOUT));
  });

  describe('keys of a newer layout', () => {
    it('fail the boot of an application, which writes nothing', async () => {
      const { alias, dumps } = await newerKeys();
      const error = await Harness.start({ options: { alias, ...OPTIONS }, worker: WORKER }).catch((e: unknown) => e);
      expectRefusal(error);
      expect(await dumpsOf(redis, alias)).toEqual(dumps);
    });

    it('fail the creation of a terminal inspector, which writes nothing', async () => {
      const { alias, dumps } = await newerKeys();
      const error = await createInspector({ connection: redisUrl(), alias }).catch((e: unknown) => e);
      expectRefusal(error);
      expect(await dumpsOf(redis, alias)).toEqual(dumps);
    });
  });
});
