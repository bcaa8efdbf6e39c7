import { TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Acknowledgement, LeasedRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { FailService, MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';
import { handWritten, readStoredPayload, successfulIds } from '../support/stored-payload.js';

const RESULT_TTL_MS = 60_000;

/** The acknowledgement of a worker's plain success of `run`. */
const succeeded = (run: LeasedRun): Acknowledgement => ({
  id: run.id,
  queue: run.queue,
  token: run.token,
  outcome: { kind: 'successful', returnValue: undefined },
});

/** A run with a generated id (not checked against existing ones), its payload written by hand. */
const generated = (id: string, payload: string) => ({ ...handWritten(id, payload), idempotent: false });

describe('what is stored in Redis', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ options: { resultTtlMs: RESULT_TTL_MS } });
  });
  afterAll(() => app.close());

  const redis = () => app.backend.connections.client;

  it('keeps every key of a backend under one hash tag', async () => {
    await app.queue.enqueue(MathService, 'add', [1, 2]);
    await app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 60_000 });
    const keys = await redis().keys(`*${app.alias}*`);
    expect(keys.length).toBeGreaterThan(5);
    for (const key of keys) expect(key.startsWith(`threadmill:{${app.alias}}:`)).toBe(true);
  });

  it('never expires a run by a TTL: a finished one is removed with its index entry', async () => {
    const ready = await app.queue.enqueue(MathService, 'add', [1, 2]);
    const deferred = await app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 3_600_000 });
    // Runs no attempt settled are records of the fresh hash, which has no TTL.
    const fresh = app.backend.keys.fresh;
    expect(await redis().hexists(fresh, ready.id)).toBe(1);
    expect(await redis().hexists(fresh, deferred.id)).toBe(1);
    expect(await redis().pttl(fresh)).toBe(-1);

    const leased = await app.backend.claim(['default'], 10, 'host:1:0', 0);
    const mine = leased.find((run) => run.id === ready.id)!;
    expect(await redis().hexists(fresh, ready.id)).toBe(1);
    expect(await redis().pttl(fresh)).toBe(-1);
    await app.backend.acknowledge([
      { id: mine.id, queue: 'default', token: mine.token, outcome: { kind: 'successful', returnValue: '3' } },
    ]);
    // Its success from the fresh record moved it to the done hash (no run
    // hash of its own), without a TTL: it goes with its entry of the
    // successful index once its result expires.
    expect(await redis().hexists(fresh, ready.id)).toBe(0);
    expect(await redis().exists(app.backend.keys.run(ready.id))).toBe(0);
    expect(await redis().hexists(app.backend.keys.done, ready.id)).toBe(1);
    expect(await redis().pttl(app.backend.keys.done)).toBe(-1);
    expect(await successfulIds(redis(), app.backend.keys.successful('default'))).toContain(ready.id);
    expect(await redis().hexists(fresh, deferred.id)).toBe(1);
  });

  it('keeps a priority other than 0 in the envelope, and reads envelopes that still name their queue', async () => {
    const urgent = await app.queue.enqueue(MathService, 'add', [1, 2], { priority: 7 });
    expect(await readStoredPayload(app.backend, urgent.id)).toBe('["MathService.add",[1,2],7]');
    expect(await app.queue.getResult(urgent.id)).toMatchObject({ priority: 7, queue: 'default', args: [1, 2] });

    // An envelope as written before the queue and a 0 priority moved out of it.
    const id = `legacy-${Date.now()}`;
    await app.backend.store([
      handWritten(id, '{"v":1,"task":"MathService.add","queue":"default","priority":0,"args":[2,3]}'),
    ]);
    expect(await app.queue.getResult(id)).toMatchObject({
      taskName: 'MathService.add',
      priority: 0,
      queue: 'default',
      args: [2, 3],
    });
    const [leased] = (await app.backend.claim(['default'], 100, 'host:1:0', 0)).filter((run) => run.id === id);
    expect(leased!.payload).toBe('{"v":1,"task":"MathService.add","queue":"default","priority":0,"args":[2,3]}');
    await app.backend.acknowledge([succeeded(leased!)]);
  });

  it('claims in ready order whether runs are first attempts, retries or have odd ids', async () => {
    const claimer = await Harness.start({});
    try {
      const [first, second, third, fourth] = await claimer.queue.enqueueMany([
        { task: 'MathService.add', args: [1, 1] },
        { task: 'MathService.add', args: [2, 2] },
        { task: 'MathService.add', args: [3, 3], id: `odd\nid-${Date.now()}` },
        { task: 'MathService.add', args: [4, 4] },
      ]);
      // Valid JSON may hold a raw newline between its tokens (a payload written by hand).
      const newlinePayload = '{"v":1,\n"task":"MathService.add","args":[5,5]}';
      const fifth = `newline-payload-${Date.now()}`;
      await claimer.backend.store([handWritten(fifth, newlinePayload)]);
      // The first comes back READY for a second attempt, ahead of the rest (its score is kept).
      const [leased] = await claimer.backend.claim(['default'], 1, 'host:1:0', 0);
      expect(leased!.id).toBe(first!.id);
      await claimer.backend.acknowledge([
        {
          id: leased!.id,
          queue: 'default',
          token: leased!.token,
          outcome: { kind: 'retry', delayMs: 0, error: { errorClass: 'E', message: 'm', stack: 's', attempt: 1 } },
        },
      ]);
      const batch = await claimer.backend.claim(['default'], 10, 'host:1:0', 1);
      expect(batch.map((run) => [run.id, run.attempts])).toEqual([
        [first!.id, 2],
        [second!.id, 1],
        [third!.id, 1],
        [fourth!.id, 1],
        [fifth, 1],
      ]);
      expect(JSON.parse(batch[2]!.payload)).toEqual(['MathService.add', [3, 3]]);
      expect(batch[4]!.payload).toBe(newlinePayload);
    } finally {
      await claimer.close();
    }
  });

  it('never rewrites the stored payload: claims, retries and results sit beside it', async () => {
    const run = await app.queue.enqueue(FailService, 'flaky', [1]);
    const stored = () => readStoredPayload(app.backend, run.id);
    const payload = await stored();
    // The queue is a field of the run's record, and priority 0 is implied: neither repeats in the envelope.
    expect(payload).toBe('["FailService.flaky",[1]]');

    const claim = async () => (await app.backend.claim(['default'], 100, 'host:1:0', 0)).find((r) => r.id === run.id)!;
    const first = await claim();
    expect(await stored()).toBe(payload);
    await app.backend.acknowledge([
      {
        id: run.id,
        queue: 'default',
        token: first.token,
        outcome: { kind: 'retry', delayMs: 0, error: { errorClass: 'E', message: 'm', stack: 's', attempt: 1 } },
      },
    ]);
    expect(await stored()).toBe(payload);
    const second = await claim();
    expect(second.token).not.toBe(first.token);
    await app.backend.acknowledge([
      { id: run.id, queue: 'default', token: second.token, outcome: { kind: 'successful', returnValue: '"ok"' } },
    ]);
    expect(await stored()).toBe(payload);
    expect(await app.queue.getResult(run.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      attempts: 2,
      returnValue: 'ok',
    });
  });

  it("scores a bulk call's runs with consecutive integers in call order, in the ready list or set and in each record", async () => {
    // A bulk call prints its priority-0 scores from their hundreds and a table
    // of last digits; small calls and other priorities print them in full.
    const other = await Harness.start({});
    try {
      const calls = [1, 99, 250, 1_234, 3];
      const ids: string[] = [];
      for (const size of calls) {
        const runs = await other.queue.enqueueMany(
          Array.from({ length: size }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
        );
        ids.push(...runs.map((run) => run.id));
      }
      const urgent = await other.queue.enqueueMany(
        Array.from({ length: 150 }, (_, i) => ({ task: 'MathService.add', args: [i, 2], priority: 7 })),
      );
      const client = other.backend.connections.client;
      // Priority 0 ready now: the ready list, in call order; the rest: the ready set.
      expect(await client.lrange(other.backend.keys.readyList('default'), 0, -1)).toEqual(ids);
      const ready = await client.zrange(other.backend.keys.ready('default'), 0, -1, 'WITHSCORES');
      const scores = new Map<string, string>();
      for (let i = 0; i < ready.length; i += 2) scores.set(ready[i]!, ready[i + 1]!);
      const records = await client.hmget(other.backend.keys.fresh, ...ids, ...urgent.map((run) => run.id));
      const recorded = records.map((record) => record!.split('|')[1]!);
      // Priority 0: 1, 2, 3, ... in call order in the record.
      expect(recorded.slice(0, ids.length)).toEqual(ids.map((_, i) => String(i + 1)));
      // Priority 7: below every priority-0 score, consecutive, in call order.
      const band = -7 * 2 ** 44;
      const expected = urgent.map((_, i) => String(band + ids.length + i + 1));
      expect(scores.size).toBe(urgent.length);
      expect(urgent.map((run) => scores.get(run.id))).toEqual(expected);
      expect(recorded.slice(ids.length)).toEqual(expected);
    } finally {
      await other.close();
    }
  });

  it("keeps a call's positions when a hand-written payload with a newline travels on its own", async () => {
    const existing = handWritten(`existing-${Date.now()}`, '{"v":1,"task":"MathService.add","args":[1,1]}');
    await app.backend.store([existing]);
    const outcome = await app.backend.store([
      generated(`a-${Date.now()}`, '{"v":1,"task":"MathService.add","args":[2,2]}'),
      handWritten(`b-${Date.now()}`, '{"v":1,\n"task":"MathService.add","args":[3,3]}'),
      existing,
      generated(`c-${Date.now()}`, '{"v":1,"task":"MathService.add","args":[4,4]}'),
    ]);
    expect(outcome.created).toEqual([true, true, false, true]);
  });

  it('stores, claims and acknowledges batches beyond the unpack limit of Lua (9,000 runs per call)', async () => {
    const other = await Harness.start({ options: { resultTtlMs: 0, leaseTtlMs: 60_000 } });
    try {
      const runs = await other.queue.enqueueMany(
        Array.from({ length: 9_000 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      );
      const leased = await other.backend.claim(['default'], 9_000, 'host:1:0', 0);
      expect(leased.map((run) => run.id).sort()).toEqual(runs.map((run) => run.id).sort());
      expect(JSON.parse(leased[8_999]!.payload)).toEqual(['MathService.add', [8_999, 1]]);
      const applied = await other.backend.acknowledge(leased.map(succeeded));
      expect(applied.every(Boolean)).toBe(true);
      expect(applied).toHaveLength(9_000);
      expect((await other.queue.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0 });
      expect(await other.backend.connections.client.hlen(other.backend.keys.fresh)).toBe(0);
      expect(await other.backend.connections.client.hlen(other.backend.keys.leases)).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('deletes a finished run at once when resultTtlMs is 0', async () => {
    const other = await Harness.start({ options: { resultTtlMs: 0 } });
    try {
      const run = await other.queue.enqueue(MathService, 'add', [1, 2]);
      const [leased] = await other.backend.claim(['default'], 1, 'host:1:0', 0);
      await other.backend.acknowledge([
        { id: run.id, queue: 'default', token: leased!.token, outcome: { kind: 'successful', returnValue: '3' } },
      ]);
      expect(await other.queue.getResults([run.id])).toEqual([null]);
      expect((await other.queue.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, successful: 0 });
    } finally {
      await other.close();
    }
  });

  it('deletes the run hash of a retried run finished beside fresh ones when resultTtlMs is 0', async () => {
    const other = await Harness.start({ options: { resultTtlMs: 0 } });
    try {
      const retried = await other.queue.enqueue(MathService, 'add', [1, 2]);
      const [first] = await other.backend.claim(['default'], 1, 'host:1:0', 0);
      const error = { errorClass: 'Error', message: 'flaky', stack: '', attempt: 1 };
      await other.backend.acknowledge([
        { id: retried.id, queue: 'default', token: first!.token, outcome: { kind: 'retry', error, delayMs: 0 } },
      ]);
      const client = other.backend.connections.client;
      expect(await client.exists(other.backend.keys.run(retried.id))).toBe(1); // a retry keeps a run hash
      const fresh = await other.queue.enqueue(MathService, 'add', [3, 4]);
      const leased = await other.backend.claim(['default'], 2, 'host:1:0', 0);
      expect(leased.map((run) => [run.id, run.attempts])).toEqual([
        [retried.id, 2],
        [fresh.id, 1],
      ]);
      const applied = await other.backend.acknowledge(leased.map(succeeded));
      expect(applied).toEqual([true, true]);
      expect(await other.queue.getResults([retried.id, fresh.id])).toEqual([null, null]);
      expect(await client.exists(other.backend.keys.run(retried.id), other.backend.keys.run(fresh.id))).toBe(0);
      expect(await client.hlen(other.backend.keys.fresh)).toBe(0);
    } finally {
      await other.close();
    }
  });
});
