import assert from 'node:assert/strict';
import type { ModelRig } from './redis-rig.js';
import {
  classOf,
  isPast,
  QUEUES,
  readyIds,
  unparkedIds,
  RESULT_TTLS,
  runsIn,
  SEGMENTS,
  STATUS_TEXT,
  ttlOf,
  type ModelRun,
  type RunModel,
} from './run-model.js';

/** The segments whose scores are the deadlines, due and cancel times the scripts compare with now. */
const TIMED = ['running', 'deferred', 'cancelled'] as const;

/**
 * The oracle, after every step: Redis holds exactly the model's runs.
 *
 * - Every run is in exactly one segment, of its own queue, and it is the one
 *   its status says (R2); no segment holds a run the model does not have.
 * - The ready segment lists each queue's runs in priority-then-FIFO order (R6).
 * - `counts` equals the sizes of the indexes and the model's counts (R5).
 * - Each run is one record, fresh, done or a run hash (R1); a run that left
 *   is gone, so its id is free again. A done record is a run that succeeded
 *   in its first charged attempt (layout 3).
 * - `attempts` is the model's charged attempts (plus the current one while
 *   leased), never more than the attempts that started; `recoveries` agrees.
 * - The leases hash holds exactly the model's current leases (R3, R4): token,
 *   attempt, started flag, holder; none belongs to a claim nobody got back.
 * - Every finished run has exactly one index entry, in the index of its
 *   outcome and TTL class (its outcome's default, or its task's own TTL);
 *   no index entry names a run that left or moved (none is orphaned, and no
 *   run is kept without its entry). Every class index that holds runs is
 *   registered in its queue's `result-classes`; each successful list is in
 *   the order its runs succeeded.
 * - Every deadline, due and finish time is on the same side of now as the
 *   model's, each finish time for the TTL of the index that holds it.
 * - Each queue's counters count every call once, a resent copy not again.
 * - Each queue is paused in Redis exactly when it is in the model, and has its cap and rate limit.
 * - The library logged no error (a ghost: an id in a set without its record).
 */
/**
 * A successful index's ids as ZRANGE WITHSCORES pairs, each scored by the
 * finish time its stored run holds (lua/includes/successful-index.lua: the
 * entry is the id alone, the time is the record's).
 */
function successfulPairs(ids: string[], finishedAt: ReadonlyMap<string, string | undefined>): string[] {
  return ids.flatMap((id) => [id, finishedAt.get(id) ?? 'NaN']);
}

export async function assertMatches(model: RunModel, rig: ModelRig): Promise<void> {
  const { backend, client } = rig;
  const { keys } = backend;
  const [pages, counts, leases, fresh, done, loaded, hashes, charged, scored, listed, classKeys, stats] =
    await Promise.all([
      Promise.all(QUEUES.flatMap((queue) => SEGMENTS.map((segment) => backend.list(queue, segment, 0, 10_000)))),
      backend.counts(QUEUES),
      client.hgetall(keys.leases),
      client.hkeys(keys.fresh),
      client.hkeys(keys.done),
      backend.loadMany(model.ids),
      Promise.all(model.ids.map((id) => client.exists(keys.run(id)))),
      // The attempts settled, as stored: a fresh record has none yet.
      Promise.all(model.ids.map((id) => client.hget(keys.run(id), 'attempts'))),
      Promise.all(
        QUEUES.flatMap((queue) =>
          TIMED.map((segment) => client.zrange(keys.segment(queue, segment), 0, -1, 'WITHSCORES')),
        ),
      ),
      // Every finished index (default and registered classes), with its entries (successful: ids).
      Promise.all(
        QUEUES.map(async (queue) =>
          Promise.all(
            (await rig.indexKeys(queue)).map(async (index) => ({
              ...index,
              queue,
              flat:
                index.status === 'successful'
                  ? await client.lrange(index.key, 0, -1)
                  : await client.zrange(index.key, 0, -1, 'WITHSCORES'),
            })),
          ),
        ),
      ),
      // Every class index that exists, registered or not.
      Promise.all(
        QUEUES.map(async (queue) => [
          ...(await client.keys(`${keys.prefix}q:${queue}:successful:*`)),
          ...(await client.keys(`${keys.prefix}q:${queue}:failed:*`)),
        ]),
      ),
      Promise.all(QUEUES.map((queue) => backend.stats(queue))),
    ]);
  const [paused, caps, limits] = await Promise.all([
    backend.pausedSince(QUEUES),
    backend.concurrencyCaps(QUEUES),
    backend.rateLimits(QUEUES),
  ]);
  QUEUES.forEach((queue, q) => {
    assert.equal(paused[q] !== null, model.paused.has(queue), `${queue} is paused in Redis as in the model`);
    assert.equal(caps[q], model.caps.get(queue) ?? null, `${queue}'s cap in Redis as in the model`);
    assert.equal(limits[q]?.max ?? null, model.rateLimits.get(queue) ?? null, `${queue}'s rate limit as in the model`);
  });
  const now = Date.now();
  // Each index's entries as id, finish time pairs: a successful run's time is its record's.
  const finishedAt = new Map(model.ids.map((id, i) => [id, loaded[i]?.['finishedAt']]));
  const indexes = listed.map((queueIndexes) =>
    queueIndexes.map((index) =>
      index.status === 'successful' ? { ...index, flat: successfulPairs(index.flat, finishedAt) } : index,
    ),
  );

  const places = new Map<string, string[]>();
  QUEUES.forEach((queue, q) => {
    SEGMENTS.forEach((segment, s) => {
      const ids = pages[q * SEGMENTS.length + s]!;
      for (const id of ids) places.set(id, [...(places.get(id) ?? []), `${queue}/${segment}`]);
      const modelled = runsIn(model, queue, segment).length;
      assert.equal(ids.length, modelled, `${queue}'s ${segment} segment holds ${ids.length} runs, not ${modelled}`);
      assert.equal(counts[q]![segment as keyof (typeof counts)[number]], ids.length, `counts of ${queue}/${segment}`);
    });
    // Ready runs in ready order, then those parked by their limit groups (in some order of groups).
    const unparked = unparkedIds(model, queue);
    const readyPage = pages[q * SEGMENTS.length + SEGMENTS.indexOf('ready')]!;
    assert.deepEqual(readyPage.slice(0, unparked.length), unparked, `${queue}'s ready order`);
    assert.deepEqual(
      readyPage.slice(unparked.length).sort(),
      readyIds(model, queue)
        .filter((id) => model.runs.get(id)!.parked)
        .sort(),
      `${queue}'s parked runs, listed after the others`,
    );
  });
  for (const [id, where] of places) assert.ok(model.runs.has(id), `Redis holds run ${id} in ${where}; it should not`);

  const freshIds = new Set(fresh);
  const doneIds = new Set(done);
  for (const id of freshIds) assert.ok(model.runs.has(id), `a fresh record of ${id}, a run that left`);
  for (const id of doneIds) assert.ok(model.runs.has(id), `a done record of ${id}, a run that left`);
  model.ids.forEach((id, i) => {
    const run = model.runs.get(id);
    const records = (freshIds.has(id) ? 1 : 0) + (doneIds.has(id) ? 1 : 0) + hashes[i]!;
    if (!run) {
      assert.equal(loaded[i], null, `run ${id} left, but Redis still has it`);
      assert.equal(records, 0, `records of ${id}, a run that left`);
      return;
    }
    assert.deepEqual(places.get(id), [`${run.queue}/${run.status}`], `segments of ${id}`);
    assert.equal(records, 1, `${id} has one record, fresh, done or a run hash`);
    if (doneIds.has(id)) {
      assert.equal(run.status, 'successful', `${id} has a done record, but is ${run.status}`);
      assert.equal(run.charged, 1, `${id} has a done record after ${run.charged} charged attempts`);
    }
    if (run.logs !== undefined || run.progress !== undefined) {
      // A report moves the run to its run hash for good: no later outcome makes it a done record.
      assert.ok(!freshIds.has(id) && !doneIds.has(id), `${id} reported, but is still in fresh or done`);
    }
    const stored = doneIds.has(id) ? loaded[i]?.['attempts'] : charged[i];
    assert.equal(Number(stored ?? 0), run.charged, `attempts ${id} was charged`);
    checkRun(run, loaded[i] ?? null, leases[id]);
  });
  for (const id of Object.keys(leases)) {
    // Flow nodes' leases are checked with their flows (`flow-check.ts`).
    if (model.flows.nodes.has(id)) continue;
    assert.equal(model.runs.get(id)?.status, 'running', `a lease on ${id}, which no claim it answered holds`);
  }

  QUEUES.forEach((queue, q) => {
    TIMED.forEach((segment, s) => {
      const flat = scored[q * TIMED.length + s]!;
      for (let i = 0; i < flat.length; i += 2) {
        const run = model.runs.get(flat[i]!)!;
        // A cancelled run's is its finish time, compared for the TTL it is kept (the default failed one).
        const kept = segment === 'cancelled' ? RESULT_TTLS.failed : 0;
        const modelled =
          segment === 'running' ? run.lease!.deadline : segment === 'deferred' ? run.dueAt! : run.finishedAt!;
        assert.equal(
          isPast(Number(flat[i + 1]) + kept, now),
          isPast(modelled + kept, now),
          `${queue}/${segment} time of ${run.id}`,
        );
      }
    });
  });

  // The finished indexes: each finished run in one, its class's; every entry a finished run of it.
  const entries = new Map<string, number>();
  for (const { queue, status, member, key, flat } of indexes.flat()) {
    const ttl = member === undefined ? RESULT_TTLS[status] : Number(member.slice(member.indexOf(':') + 1));
    for (let i = 0; i < flat.length; i += 2) {
      const id = flat[i]!;
      const run = model.runs.get(id);
      assert.ok(
        run?.queue === queue && run.status === status,
        `${key} names ${id}, which is not a ${status} run of it`,
      );
      assert.equal(classOf(run, status), member, `the index of ${id}, kept for ${ttlOf(run, status)} ms`);
      entries.set(id, (entries.get(id) ?? 0) + 1);
      const [real, modelled] = [Number(flat[i + 1]) + ttl, run.finishedAt! + ttlOf(run, status)];
      assert.equal(isPast(real, now), isPast(modelled, now), `${key} time of ${id}`);
    }
    if (status === 'successful') {
      // The list is in the order the runs succeeded.
      const order = flat.filter((_, i) => i % 2 === 0).map((id) => model.runs.get(id)!.finishedSeq!);
      assert.deepEqual(
        order,
        [...order].sort((a, b) => a - b),
        `${key} order`,
      );
    }
  }
  for (const run of model.runs.values()) {
    if (run.status === 'successful' || run.status === 'failed') {
      assert.equal(entries.get(run.id), 1, `index entries of ${run.status} run ${run.id}`);
    }
  }
  QUEUES.forEach((_, q) => {
    const registered = new Set(indexes[q]!.map(({ key }) => key));
    for (const key of classKeys[q]!) assert.ok(registered.has(key), `${key} holds runs, but is not a registered class`);
  });

  QUEUES.forEach((queue, q) => assert.deepEqual(stats[q], model.stats[queue], `the counters of ${queue}`));

  const { lines } = rig.harness.logger;
  assert.deepEqual(
    lines.filter((line) => line.level === 'error'),
    [],
    'the library logged errors',
  );
  lines.length = 0;
}

function checkRun(run: ModelRun, stored: Readonly<Record<string, string>> | null, lease: string | undefined): void {
  assert.ok(stored, `run ${run.id} is stored`);
  const leased = run.status === 'running';
  assert.equal(stored['queue'], run.queue, `queue of ${run.id}`);
  assert.equal(stored['status'] ?? 'READY', STATUS_TEXT[run.status], `status of ${run.id}`);
  // While leased, readers see the current attempt: the charged ones and this.
  assert.equal(Number(stored['attempts'] ?? 0), run.charged + (leased ? 1 : 0), `attempts of ${run.id}`);
  assert.ok(run.charged <= run.started, `${run.id} charged ${run.charged} attempts, started ${run.started}`);
  assert.equal(Number(stored['recoveries'] ?? 0), run.recoveries, `recoveries of ${run.id}`);
  assert.equal(stored['progress'], run.progress, `progress of ${run.id}`);
  assert.equal(stored['logs'], run.logs?.join('\n'), `logs of ${run.id}`);
  assert.equal(stored['logLines'], run.logs && String(run.logs.length), `log line count of ${run.id}`);
  if (!leased) {
    assert.equal(lease, undefined, `a lease on ${run.id}, which is ${run.status}`);
    return;
  }
  assert.ok(lease, `the lease of ${run.id}`);
  const [token, , attempt, recoveries, started, ...worker] = lease.split('|');
  const expected = run.lease!;
  assert.deepEqual(
    { token, attempt: Number(attempt), recoveries: Number(recoveries), started, worker: worker.join('|') },
    {
      token: expected.token,
      attempt: expected.attempt,
      recoveries: run.recoveries,
      started: String(expected.flag),
      worker: JSON.stringify(expected.worker),
    },
    `the lease of ${run.id}`,
  );
}
