import { TaskBackend, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionedTaskBackend } from '../../libs/threadmill/src/backend/partitioned/partitioned.backend.js';
import { fnv1a } from '../../libs/threadmill/src/backend/partitioned/partition-router.js';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

const PARTITIONS = 3;
/** The partition whose master is killed (not home: its heartbeat and registry are not what is tested). */
const VICTIM = 1;

/** A test's own cluster (3 masters, a replica each), a producer on it, and what to stop after. */
interface Rig {
  cluster: RedisCluster;
  client: Cluster;
  producer: Harness;
  backend: PartitionedTaskBackend;
  alias: string;
  pool?: WorkerProcess;
  witness?: Witness;
}

let rig: Rig | undefined;

async function startRig(label: string): Promise<Rig> {
  const cluster = await RedisCluster.start(3, 1);
  const client = cluster.client();
  const alias = uniqueAlias(label);
  const producer = await Harness.start({ options: { alias, connection: client, partitions: PARTITIONS } });
  const backend = producer.module.get(TaskBackend) as unknown as PartitionedTaskBackend;
  rig = { cluster, client, producer, backend, alias };
  // What a master confirmed before its replica applied anything would be lost with it: not what is tested here.
  await cluster.replicasCaughtUp();
  return rig;
}

afterEach(async () => {
  if (!rig) return;
  const { cluster, client, producer, pool, witness } = rig;
  rig = undefined;
  await pool?.stop();
  witness?.close();
  await producer.close();
  client.disconnect();
  await cluster.stop();
});

/** Kills the master of partition `p` (SIGKILL); resolves with the slot and a wait for its replica to serve it. */
async function killMasterOf({ cluster, backend }: Rig, p: number) {
  const slot = keySlot(backend.partitionAliases()[p]!);
  const victim = await cluster.owner(slot);
  await victim.kill('SIGKILL');
  const killedAt = Date.now();
  const failedOver = waitUntil(
    'a replica serves the slot',
    async () => (await cluster.owner(slot).catch(() => victim)) !== victim,
    30_000,
  ).then(() => Date.now());
  failedOver.catch(() => undefined);
  return { killedAt, failedOver };
}

/** Partition keys whose runs go to partition `p` (the router hashes a key modulo the count). */
function keysOf(p: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) if (fnv1a(`key-${i}`) % PARTITIONS === p) keys.push(`key-${i}`);
  return keys;
}

describe('fault: one partition master killed (3 masters, 3 replicas, failover slower than a lease)', () => {
  it('renews the leases of the other partitions through the outage: their runs neither abort nor run twice, and a cancel reaches them at once', async () => {
    const LEASE_TTL_MS = 3_000;
    const { producer, backend, alias, cluster } = await startRig('outage-renew');
    const witness = (rig!.witness = new Witness(alias));
    const { queue } = producer;
    // Long runs in the partitions that stay up, two of which are cancelled mid-outage.
    const long: { id: string }[] = [];
    for (const p of [0, 2]) {
      for (const key of keysOf(p, 2))
        long.push(await queue.enqueue('WitnessService.cancellable', [12_000], { partitionKey: key }));
    }
    const short = await queue.enqueueMany(
      Array.from({ length: 240 }, () => ({ task: 'WitnessService.cancellable', args: [800] })),
    );
    rig!.pool = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '8', '--prefetch', '4'], {
      REDIS_CLUSTER_PORTS: cluster.nodes.map((node) => node.port).join(','),
      THREADMILL_PARTITIONS: String(PARTITIONS),
      LEASE_TTL_MS: String(LEASE_TTL_MS),
    });
    await waitUntil(
      'the long runs and some short ones started',
      async () => {
        const starts = await witness.starts();
        return long.every((run) => starts.has(run.id)) && starts.size >= 40;
      },
      30_000,
    );

    const { killedAt, failedOver } = await killMasterOf(rig!, VICTIM);
    // Past a lease of the dead master's runs, and well before its replica takes over.
    await delay(LEASE_TTL_MS + 500);
    const cancelled = [long[0]!, long[2]!];
    const cancelledAt = Date.now();
    for (const run of cancelled) expect((await queue.cancel(run.id)).cancelled).toBe(true);
    const failoverAt = await failedOver;

    const all = [...long, ...short];
    await waitUntil(
      'every run finished',
      async () => (await queue.getResults(all.map((run) => run.id))).every((result) => isFinal(result)),
      90_000,
    );
    const results = await queue.getResults(all.map((run) => run.id));
    const [starts, aborts] = [await witness.starts(), await witness.aborts()];
    const partitionOf = (id: string) => backend.partitionOfRun(id);
    const up = all.filter((run) => partitionOf(run.id) !== VICTIM);
    const down = all.filter((run) => partitionOf(run.id) === VICTIM);
    const log = rig!.pool!.log;
    const handedBack = up.filter((run) => log.includes(`Not starting run ${run.id}`)).length;
    const falselyLost = up.filter((run) => log.includes(`Lost the lease of run ${run.id}`)).length;
    const repeatedDown = down.filter((run) => (starts.get(run.id) ?? 0) > 1).length;
    const finishedDuringOutage = results.filter((result, i) => {
      const at = result?.finishedAt?.getTime() ?? 0;
      return partitionOf(all[i]!.id) !== VICTIM && at > killedAt && at < failoverAt;
    }).length;
    console.log(
      `partition outage: killed the master of partition ${VICTIM}, replica served after ${failoverAt - killedAt} ms; ` +
        `cancels sent ${cancelledAt - killedAt} ms after the kill aborted their attempts after ` +
        `${cancelled.map((run) => aborts.get(run.id)!.at - cancelledAt).join(', ')} ms; other partitions: ` +
        `${up.length} runs, started more than once ${up.filter((run) => starts.get(run.id)! > 1).length}, ` +
        `handed back unstarted ${handedBack}, lost-lease warnings ${falselyLost}, finished during the outage ` +
        `${finishedDuringOutage}; dead master's partition: ` +
        `${down.length} runs, started more than once ${repeatedDown}`,
    );
    // The cancel reaches its attempts within a renewal or two, not after the failover.
    for (const run of cancelled) {
      expect(aborts.get(run.id)).toMatchObject({ reason: 'CancelledError' });
      expect(aborts.get(run.id)!.at - cancelledAt).toBeLessThan(2_500);
      expect(aborts.get(run.id)!.at).toBeLessThan(failoverAt);
    }
    // Runs of the partitions that stayed up: each started once, none aborted but the cancelled, none handed back.
    for (const run of up) expect(starts.get(run.id), run.id).toBe(1);
    expect(up.filter((run) => aborts.has(run.id))).toEqual(cancelled);
    expect(handedBack).toBe(0);
    expect(falselyLost).toBe(0);
    // And they kept running: a third at least of what their 12 free slots finish in that time.
    expect(finishedDuringOutage).toBeGreaterThan(((failoverAt - killedAt) / 800) * 12 * 0.3);
    // The dead master's runs: none lost, each finished; those whose lease ran out during the failover ran again
    // (as after a worker's crash), at most what the pool held at once.
    results.forEach((result, i) => {
      const run = all[i]!;
      expect(result?.status, run.id).toBe(cancelled.includes(run) ? TaskStatus.CANCELLED : TaskStatus.SUCCESSFUL);
    });
    expect(repeatedDown).toBeLessThanOrEqual(2 * (8 + 4));
  }, 180_000);

  it('routes new runs without a key away from a partition whose master is down, and back once its replica serves it', async () => {
    const { producer, backend } = await startRig('outage-route');
    const { queue } = producer;
    const outcomes: { issuedAt: number; settledAt: number; partition: number | null; id?: string }[] = [];
    const production = { on: true };
    // Four producers in the process, each enqueueing one run at a time, without a key.
    const produce = async () => {
      while (production.on) {
        const issuedAt = Date.now();
        try {
          const run = await queue.enqueue('MathService.add', [1, 2]);
          outcomes.push({ issuedAt, settledAt: Date.now(), partition: backend.partitionOfRun(run.id), id: run.id });
        } catch {
          outcomes.push({ issuedAt, settledAt: Date.now(), partition: null });
        }
        await delay(5);
      }
    };
    const producers = Array.from({ length: 4 }, produce);
    await delay(500);
    const { killedAt, failedOver } = await killMasterOf(rig!, VICTIM);
    await waitUntil('an enqueue failed', () => outcomes.some((outcome) => outcome.partition === null), 10_000);
    const firstFailure = outcomes.find((outcome) => outcome.partition === null)!.settledAt;
    // A run keyed to the partition that is down must go there, and fails while it is down.
    const [victimKey] = keysOf(VICTIM, 1);
    await expect(queue.enqueue('MathService.add', [1, 2], { partitionKey: victimKey })).rejects.toThrow(
      /Cluster|Redis|Connection/,
    );
    const failoverAt = await failedOver;
    await waitUntil(
      'round-robin sends runs to the partition again',
      () => outcomes.some((outcome) => outcome.issuedAt > failoverAt && outcome.partition === VICTIM),
      10_000,
    );
    const backAt = outcomes.find((outcome) => outcome.issuedAt > failoverAt && outcome.partition === VICTIM)!.settledAt;
    production.on = false;
    await Promise.all(producers);

    const during = outcomes.filter((outcome) => outcome.issuedAt > killedAt && outcome.issuedAt < failoverAt);
    const failedAfterFirst = outcomes.filter(
      (outcome) => outcome.partition === null && outcome.issuedAt > firstFailure,
    );
    console.log(
      `partition outage routing: killed the master of partition ${VICTIM}; first enqueue failure after ` +
        `${firstFailure - killedAt} ms; replica served after ${failoverAt - killedAt} ms; during the outage ` +
        `${during.length} enqueues, ${during.filter((outcome) => outcome.partition === null).length} failed, ` +
        `${failedAfterFirst.length} of them issued after the first failure; runs routed there again ` +
        `${backAt - failoverAt} ms after the failover`,
    );
    // Every enqueue issued after the first failure went to a partition that answers.
    expect(failedAfterFirst).toEqual([]);
    expect(during.filter((outcome) => outcome.issuedAt > firstFailure).every((o) => o.partition !== VICTIM)).toBe(true);
    expect(during.filter((outcome) => outcome.partition !== null).length).toBeGreaterThan(during.length / 2);
    // Back within a probe's recheck (1 s) and its answer.
    expect(backAt - failoverAt).toBeLessThan(3_000);
    // Every run it was told is stored is there.
    const confirmed = outcomes.flatMap((outcome) => (outcome.id === undefined ? [] : [outcome.id]));
    expect((await queue.getResults(confirmed)).filter((result) => result === null)).toEqual([]);
  }, 120_000);
});

function isFinal(result: TaskResult | null): boolean {
  return result !== null && [TaskStatus.SUCCESSFUL, TaskStatus.FAILED, TaskStatus.CANCELLED].includes(result.status);
}
