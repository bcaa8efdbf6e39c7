import type { FailurePolicy, FlowSpec, TaskResult } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoredFlow } from '../../libs/threadmill/src/records/flow-records.js';
import { waitUntil } from '../support/wait.js';
import { report } from './support/fault-report.js';
import { FaultRig } from './support/fault-rig.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FlowLog, judgeFlows, STEP, STEP_ONCE, type PlannedFlow, type PlannedNode } from './support/flow-verdict.js';

/** Flows of two roots and a join, drained by two processes of one slot each. */
const JOINS = scale(200, 1_000);
/** How long a root waits for its sibling to start, at most (a fallback only: the sibling runs in the other process). */
const MEET_MS = 2_000;
/** Flows of the chaos run: a root, 10 nodes after it, and 2 after six of those each (two shared). */
const FLOWS = scale(2_000, 10_000);
const FAN_OUT = 10;
const KILL_EVERY_MS = 1_000;
const KILLS = scale(4, 10);
/** Not a multiple of the kill period (see worker-chaos). */
const LEASE_MS = 1_500;
/** Flows enqueued at once. */
const ENQUEUE_CONCURRENCY = 16;
/**
 * Each node of the chaos run works 10 to 50 ms: longer than a worker takes to
 * mark a start, so that a kill also cuts nodes without a retry policy after
 * their start mark (they end FAILED, and their dependents go by their edges).
 */
const nodeMs = () => 10 + Math.floor(Math.random() * 40);
/**
 * Time budgets: generous, since the flows end when they end (the chaos run's
 * 26,000 nodes cost about a minute of CPU over all its processes, so a 2-core
 * machine busy with other work takes two to three minutes); the drain's
 * deadline leaves a minute for the enqueue, the kills and the verdict.
 */
const CHAOS_TIMEOUT_MS = scale(300_000, SCENARIO_TIMEOUT_MS);
const DRAIN_TIMEOUT_MS = CHAOS_TIMEOUT_MS - 60_000;

/** The kill period ±25%, so kills do not beat in step with leases. */
const jittered = (ms: number) => ms * (0.75 + Math.random() / 2);
const pick = <T>(values: readonly T[]): T => values[Math.floor(Math.random() * values.length)]!;

/** A flow node of a witness task: `[label, ms, waitFor, waitMs]`. */
function witnessNode(node: PlannedNode, ms: number, waitFor = '', waitMs = 0): FlowSpec['nodes'][string] {
  return { task: node.task, args: [node.label, ms, waitFor, waitMs], after: node.after };
}

/** Enqueues `count` flows built by `build(index)`, a few at once; returns them with their ids. */
async function enqueueFlows(
  rig: FaultRig,
  count: number,
  build: (index: number) => { nodes: PlannedNode[]; spec: FlowSpec },
): Promise<PlannedFlow[]> {
  const flows: PlannedFlow[] = [];
  for (let first = 0; first < count; first += ENQUEUE_CONCURRENCY) {
    const built = Array.from({ length: Math.min(ENQUEUE_CONCURRENCY, count - first) }, (_, i) => build(first + i));
    const enqueued = await Promise.all(built.map(({ spec }) => rig.producer.queue.enqueueFlow(spec)));
    enqueued.forEach(({ id, nodes }, i) => flows.push({ id, nodes: built[i]!.nodes, runIds: nodes }));
  }
  return flows;
}

/**
 * Waits until every flow has ended (or `timeoutMs` passes); returns their
 * records, read once ended. It watches the queue's counts (one call) until no
 * node is WAITING, READY, deferred or leased, and only then reads the flows:
 * reading thousands of flows over and over would take the CPU the workers need.
 */
async function flowsEnded(rig: FaultRig, flows: readonly PlannedFlow[], timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [counts] = await rig.producer.queue.counts(['default']);
    if (counts!.waiting + counts!.ready + counts!.deferred + counts!.running === 0 || Date.now() > deadline) break;
    await delay(250);
  }
  const records = new Map<string, StoredFlow | null>();
  let open = flows.map((flow) => flow.id);
  while (open.length > 0) {
    const still: string[] = [];
    for (let first = 0; first < open.length; first += 200) {
      const ids = open.slice(first, first + 200);
      const loaded = await Promise.all(ids.map((id) => rig.producer.backend.flows.load(id)));
      loaded.forEach((record, i) => {
        records.set(ids[i]!, record);
        if (record?.state === 'STAGING' || record?.state === 'RUNNING') still.push(ids[i]!);
      });
    }
    open = still;
    if (open.length === 0 || Date.now() > deadline) break;
    await delay(250);
  }
  return records;
}

/** Every node's run, by run id. */
async function nodeResults(rig: FaultRig, flows: readonly PlannedFlow[]): Promise<Map<string, TaskResult | null>> {
  const ids = flows.flatMap((flow) => Object.values(flow.runIds));
  const results = new Map<string, TaskResult | null>();
  for (let first = 0; first < ids.length; first += 1_000) {
    const batch = ids.slice(first, first + 1_000);
    (await rig.producer.queue.getResults(batch)).forEach((result, i) => results.set(batch[i]!, result));
  }
  return results;
}

/** Waits until the pool's `count` processes have registered (they consume from then on). */
async function poolReady(rig: FaultRig, count: number): Promise<void> {
  await waitUntil(
    `${count} worker processes registered`,
    async () => (await rig.producer.backend.workers()).length >= count,
    60_000,
  );
}

describe('fault: flows drained by real worker processes', () => {
  describe('two processes of one slot each, without prefetch', () => {
    // While a root waits for its sibling to start, the sibling can only run in the other process.
    let rig: FaultRig;
    beforeAll(async () => {
      rig = await FaultRig.start({ leaseTtlMs: 2_000, workers: 2, concurrency: 1, prefetch: 0 });
      rig.startPool();
      await poolReady(rig, 2);
    }, SCENARIO_TIMEOUT_MS);
    afterAll(() => rig?.stop());

    it(
      `two dependencies finishing at the same moment in two worker processes ready their dependent exactly once (${JOINS} joins)`,
      async () => {
        const flows = await enqueueFlows(rig, JOINS, (index) => {
          const [a, b, join] = ['a', 'b', 'join'].map((name) => `${index}:${name}`) as [string, string, string];
          const nodes: PlannedNode[] = [
            { name: 'a', label: a, task: STEP, after: [] },
            { name: 'b', label: b, task: STEP, after: [] },
            {
              name: 'join',
              label: join,
              task: STEP,
              after: [
                { node: 'a', onFailure: 'fail' },
                { node: 'b', onFailure: 'fail' },
              ],
            },
          ];
          const [nodeA, nodeB, nodeJoin] = nodes as [PlannedNode, PlannedNode, PlannedNode];
          return {
            nodes,
            spec: {
              nodes: {
                a: witnessNode(nodeA, 0, b, MEET_MS),
                b: witnessNode(nodeB, 0, a, MEET_MS),
                join: witnessNode(nodeJoin, 0),
              },
            },
          };
        });
        const records = await flowsEnded(rig, flows, 90_000);
        const log = await FlowLog.read(rig.witness.client, rig.alias);
        const verdict = judgeFlows(flows, records, await nodeResults(rig, flows), log, rig.kills);
        const labels = flows.flatMap((flow) => flow.nodes.map((node) => node.label));
        const notOnce = labels.filter(
          (label) => log.starts.get(label)?.length !== 1 || log.ends.get(label)?.length !== 1,
        );
        // The roots of a join ran in two processes (split), each ending after the other had started (together).
        const pairs = flows.map((_, index) => {
          const [a, b] = [`${index}:a`, `${index}:b`].map((label) => ({
            pid: log.starts.get(label)?.[0]?.pid,
            start: log.firstStart(label) ?? Infinity,
            end: log.firstEnd(label) ?? -Infinity,
          })) as [{ pid?: number; start: number; end: number }, { pid?: number; start: number; end: number }];
          return { split: a.pid !== b.pid, together: a.start < b.end && b.start < a.end };
        });
        const split = pairs.filter((pair) => pair.split).length;
        const together = pairs.filter((pair) => pair.split && pair.together).length;
        report({
          scenario: 'Flows: two dependencies finishing at the same moment in two worker processes',
          runs: verdict.nodes,
          faults: `${JOINS} joins of two roots; each root waits for its sibling's start (2 processes × 1 slot, no prefetch)`,
          lost: verdict.lost.length,
          duplicates: verdict.duplicates,
          started: verdict.started,
          charged: verdict.charged,
          notes:
            `${split} pairs of roots ran in two processes, ${together} of them overlapping (each started before the other ended); ` +
            `flow states ${JSON.stringify(verdict.flowStates)}; node statuses ${JSON.stringify(verdict.statuses)}`,
        });
        expect(verdict.flowStates).toEqual({ SUCCESSFUL: JOINS });
        expect(verdict.statuses).toEqual({ SUCCESSFUL: JOINS * 3 });
        expect(verdict.lost).toEqual([]);
        // Exactly once: each node, the join above all, started once and ended once, charged one attempt.
        expect(notOnce).toEqual([]);
        expect(verdict.charged).toBe(JOINS * 3);
        expect(verdict.startedBeforeDependency).toEqual([]);
        expect(verdict.seenWrong).toEqual([]);
        expect(verdict.wrongFlowState).toEqual([]);
        // Most joins had their dependencies end at once in two processes (a root that waited out MEET_MS only makes its pair not count).
        expect(together).toBeGreaterThanOrEqual(JOINS / 2);
      },
      SCENARIO_TIMEOUT_MS,
    );

    it(
      'each failure policy, with a dependency that fails without a retry policy: what the dependent did and what it read',
      async () => {
        const policies: FailurePolicy[] = ['fail', 'ignore', 'continue', 'remove'];
        const flows = await enqueueFlows(rig, policies.length, (index) => {
          const policy = policies[index]!;
          const label = (name: string) => `${policy}:${name}`;
          const nodes: PlannedNode[] = [
            { name: 'bad', label: label('bad'), task: 'FlowWitnessService.fail', after: [] },
            { name: 'good', label: label('good'), task: STEP_ONCE, after: [] },
            {
              name: 'dependent',
              label: label('dependent'),
              task: STEP_ONCE,
              after: [
                { node: 'bad', onFailure: policy },
                { node: 'good', onFailure: 'fail' },
              ],
            },
          ];
          const [, good, dependent] = nodes as [PlannedNode, PlannedNode, PlannedNode];
          // Under `continue` the dependent may start before `good` ends: `good` waits for that start (at most 30 s), so it does.
          const waitFor = policy === 'continue' ? dependent.label : '';
          return {
            nodes,
            spec: {
              nodes: {
                bad: { task: 'FlowWitnessService.fail', args: [label('bad')] },
                good: witnessNode(good, 0, waitFor, 30_000),
                dependent: witnessNode(dependent, 0),
              },
            },
          };
        });
        const records = await flowsEnded(rig, flows, 60_000);
        const results = await nodeResults(rig, flows);
        const log = await FlowLog.read(rig.witness.client, rig.alias);
        const observed = Object.fromEntries(
          flows.map((flow, i) => {
            const result = results.get(flow.runIds['dependent']!)!;
            const [bad, good, dependent] = flow.nodes.map((node) => node.label) as [string, string, string];
            const start = log.firstStart(dependent);
            return [
              policies[i]!,
              {
                flow: records.get(flow.id)?.state,
                bad: results.get(flow.runIds['bad']!)?.status,
                good: results.get(flow.runIds['good']!)?.status,
                dependent: `${result.status} ${result.errors.at(-1)?.errorClass ?? ''}`.trim(),
                attempts: result.attempts,
                starts: log.starts.get(dependent)?.length ?? 0,
                read: log.seen.get(dependent) ?? null,
                afterBadStarted: start === undefined ? null : start > log.firstStart(bad)!,
                afterGoodEnded: start === undefined ? null : start > log.firstEnd(good)!,
              },
            ];
          }),
        );
        report({
          scenario: 'Flows: each failure policy, a dependency failing without a retry policy',
          runs: flows.length * 3,
          faults: 'none: a dependency that throws, with no retry policy (2 processes × 1 slot)',
          lost: [...results.values()].filter((r) => r?.status !== 'SUCCESSFUL' && r?.status !== 'FAILED').length,
          duplicates: 0,
          notes: `what each dependent did and read: ${JSON.stringify(observed)}`,
        });
        const failed = { status: 'FAILED', errorClass: 'FlowWitnessError' };
        const ran = { attempts: 1, starts: 1, afterBadStarted: true };
        expect(observed).toEqual({
          fail: {
            flow: 'FAILED',
            bad: 'FAILED',
            good: 'SUCCESSFUL',
            dependent: 'FAILED DependencyFailedError',
            attempts: 0,
            starts: 0,
            read: null,
            afterBadStarted: null,
            afterGoodEnded: null,
          },
          ignore: {
            flow: 'FAILED',
            bad: 'FAILED',
            good: 'SUCCESSFUL',
            dependent: 'SUCCESSFUL',
            ...ran,
            afterGoodEnded: true,
            read: [
              { name: 'bad', ...failed },
              { name: 'good', status: 'SUCCESSFUL', result: 'ignore:good' },
            ],
          },
          // Readied by the failure at once: `good` was still running, and the dependent read it PENDING.
          continue: {
            flow: 'FAILED',
            bad: 'FAILED',
            good: 'SUCCESSFUL',
            dependent: 'SUCCESSFUL',
            ...ran,
            afterGoodEnded: false,
            read: [
              { name: 'bad', ...failed },
              { name: 'good', status: 'PENDING' },
            ],
          },
          remove: {
            flow: 'FAILED',
            bad: 'FAILED',
            good: 'SUCCESSFUL',
            dependent: 'SUCCESSFUL',
            ...ran,
            afterGoodEnded: true,
            read: [{ name: 'good', status: 'SUCCESSFUL', result: 'remove:good' }],
          },
        });
      },
      SCENARIO_TIMEOUT_MS,
    );
  });

  describe('SIGKILLed processes', () => {
    let rig: FaultRig | undefined;
    afterEach(() => rig?.stop());

    it(
      `with workers SIGKILLed at random through a run of ${FLOWS} flows (fan-out ${FAN_OUT}, depth 3, shared nodes), every flow ends, nothing is lost and no node starts before its dependencies`,
      async () => {
        rig = await FaultRig.start({ leaseTtlMs: LEASE_MS, workers: 2, concurrency: 16, prefetch: 4 });
        const policies: FailurePolicy[] = ['fail', 'ignore', 'remove'];
        const flows = await enqueueFlows(rig, FLOWS, (index) => {
          const node = (name: string, after: string[]): PlannedNode => ({
            name,
            label: `${index}:${name}`,
            // Half the nodes have no retry policy: a kill after their start fails them, and their dependents go by their edges.
            task: Math.random() < 0.5 ? STEP : STEP_ONCE,
            after: after.map((dependency) => ({ node: dependency, onFailure: pick(policies) })),
          });
          const middle = Array.from({ length: FAN_OUT }, (_, j) => `m${j}`);
          // Two last nodes join six branches each, two of which (m4, m5) feed both.
          const nodes = [
            node('r', []),
            ...middle.map((name) => node(name, ['r'])),
            node('l0', middle.slice(0, 6)),
            node('l1', middle.slice(4)),
          ];
          const spec = {
            nodes: Object.fromEntries(nodes.map((n) => [n.name, witnessNode(n, nodeMs())])),
          };
          return { nodes, spec };
        });
        const pool = rig.startPool();
        await poolReady(rig, 2);
        let kills = 0;
        let inFlightAtKills = 0;
        while (kills < KILLS) {
          await delay(jittered(KILL_EVERY_MS));
          const members = await rig.producer.backend.workers();
          if (members.length === 0) continue;
          const victim = pick(members);
          // Null when its record outlived it: killed already, or exited meanwhile.
          const held = await rig.sigkill(victim.id);
          if (held === null) continue;
          kills++;
          inFlightAtKills += held;
        }
        const [counts] = await rig.producer.queue.counts(['default']);
        const records = await flowsEnded(rig, flows, DRAIN_TIMEOUT_MS);
        const results = await nodeResults(rig, flows);
        const verdict = judgeFlows(
          flows,
          records,
          results,
          await FlowLog.read(rig.witness.client, rig.alias),
          rig.kills,
        );
        report({
          scenario: 'Flows: SIGKILL a random worker process while draining',
          runs: verdict.nodes,
          faults: `${kills} SIGKILLs, one every ${KILL_EVERY_MS / 1000} s ±25% (2 processes × 16 slots, lease ${LEASE_MS / 1000} s)`,
          lost: verdict.lost.length,
          duplicates: verdict.duplicates,
          duplicateBound: inFlightAtKills,
          started: verdict.started,
          charged: verdict.charged,
          notes:
            `${FLOWS} flows of ${verdict.nodes / FLOWS} nodes, half without a retry policy, edges fail/ignore/remove at random; ` +
            `after the last kill ${counts!.waiting} WAITING, ${counts!.ready} READY, ${counts!.running} running; ` +
            `flow states ${JSON.stringify(verdict.flowStates)}; node statuses ${JSON.stringify(verdict.statuses)}; ` +
            `${verdict.failedByKill} nodes failed by a kill after their start, ${verdict.failedByDependency} failed by a dependency without running; ` +
            `${verdict.touched} nodes started in a killed process, ${rig.kills.cut.size} leased by one at its death; ` +
            `${(pool.log.match(/Started worker slot/g) ?? []).length} process starts`,
        });
        expect(kills).toBe(KILLS);
        // The kills landed while the flows were still draining, in processes that had started nodes.
        expect(inFlightAtKills).toBeGreaterThan(0);
        expect(verdict.touched).toBeGreaterThan(0);
        expect(verdict.unended).toEqual([]);
        expect(verdict.lost).toEqual([]);
        expect(verdict.wrongFlowState).toEqual([]);
        expect(verdict.successWithoutCompletion).toEqual([]);
        expect(verdict.wrongByPolicy).toEqual([]);
        expect(verdict.failedUnexplained).toEqual([]);
        expect(verdict.startedBeforeDependency).toEqual([]);
        expect(verdict.seenWrong).toEqual([]);
        expect(verdict.duplicates).toBeLessThanOrEqual(inFlightAtKills);
        expect(verdict.overcharged).toEqual([]);
        expect(verdict.rerunNotCut).toEqual([]);
      },
      CHAOS_TIMEOUT_MS,
    );
  });
});
