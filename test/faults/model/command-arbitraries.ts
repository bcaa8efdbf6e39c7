import * as fc from 'fast-check';
import {
  BrokerPassCommand,
  ClockStepCommand,
  ConsumerDeathCommand,
  DeadWaiterCommand,
  PoisonRunCommand,
  MakeDueCommand,
  MakeTrimmableCommand,
  RestoreCommand,
  SnapshotCommand,
} from './fault-commands.js';
import {
  AcknowledgeCommand,
  ClaimCommand,
  ExpireCommand,
  ReleaseCommand,
  DeferCommand,
  RenewCommand,
  StartCommand,
  TwoLostClaimsCommand,
  WakeClaimCommand,
  type ClaimSpec,
  type LeasePick,
} from './lease-commands.js';
import type { ModelCommand, RunSpec } from './model-command.js';
import type { OutcomeKind } from './lease-transitions.js';
import {
  DequeueCommand,
  DequeueRaceCommand,
  EnqueueCommand,
  MoveCommand,
  PurgeCommand,
  PurgeRaceCommand,
  RequeueCommand,
  type Lead,
  type Target,
} from './run-commands.js';
import { CONSUMERS, HOUR, MINUTE, QUEUES, TASK, TASK_ONCE } from './run-model.js';
import { LimitCommand, TaskLimitCommand, type TaskLimitChange } from './limit-commands.js';
import { PauseCommand } from './pause-commands.js';
import { DEDUPE_MAX_WAITS, DedupeEnqueueCommand, type DedupeSpec } from './dedupe-commands.js';
import { WatchCommand } from './watch-commands.js';
import {
  DeclareSchedulesCommand,
  DueSchedulesCommand,
  FireScheduleCommand,
  RemoveScheduleCommand,
  UpsertScheduleCommand,
  type FireMode,
} from './schedule-commands.js';
import { ReportCommand, type ReportSpec } from './report-commands.js';
import { CancelCommand, CancelRaceCommand } from './cancel-commands.js';
import { GroupBurstCommand, type BurstEnd } from './group-commands.js';
import { flowCommands } from './flow-arbitraries.js';

/**
 * The steps a sequence is made of, weighted: the common ones (enqueue,
 * claim, acknowledge) most, each fault often enough that a default run of
 * 100 sequences meets every one of them many times.
 */

const runSpec: fc.Arbitrary<RunSpec> = fc.record({
  id: fc.constantFrom('new', 'new', 'free', 'taken'),
  pick: fc.nat(),
  queue: fc.constantFrom(...QUEUES),
  priority: fc.constantFrom(-1, 0, 1),
  deferred: fc.boolean().chain((deferred) => (deferred ? fc.boolean() : fc.constant(false))),
  idempotent: fc.boolean(),
  style: fc.constantFrom('plain', 'plain', 'plain', 'plain', 'pipe', 'newline'),
  // One run in two of a task with a limit: per key (mostly one key, so that its group fills), or for the task.
  group: fc.constantFrom(undefined, undefined, undefined, 'k1' as const, 'k1' as const, 'k2' as const, 'task' as const),
});
const runSpecs = fc.array(runSpec, { minLength: 1, maxLength: 4 });

const dedupeSpec: fc.Arbitrary<DedupeSpec> = fc.record({
  key: fc.constantFrom('k1', 'k1', 'k2'),
  queue: fc.constantFrom(...QUEUES),
  mode: fc.constantFrom('drop', 'drop', 'debounce'),
  timed: fc.boolean(),
  maxWaitMs: fc.constantFrom(...DEDUPE_MAX_WAITS),
  releaseOn: fc.constantFrom('start', 'finish'),
  deferred: fc.boolean(),
});
const dedupeSpecs = fc.array(dedupeSpec, { minLength: 1, maxLength: 4 });

const claimSpec: fc.Arbitrary<ClaimSpec> = fc.record({
  queues: fc.nat({ max: 3 }),
  // Mostly fewer than a queue's least share (each claim serves the first
  // queue with runs), sometimes more than two shares (an equal share each).
  count: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 4 }), weight: 9 }, { arbitrary: fc.constant(70), weight: 1 }),
  worker: fc.constantFrom(...CONSUMERS),
  offset: fc.nat({ max: 1 }),
});

/** Mostly the current lease of some run; one in four, any lease ever granted. */
const leasePick: fc.Arbitrary<LeasePick> = fc.record({
  pick: fc.nat(),
  stale: fc.nat({ max: 3 }).map((n) => n === 0),
});

/** Mostly a few lines, sometimes enough to push the oldest out of the run's last 100. */
const reportSpec: fc.Arbitrary<ReportSpec> = fc.record({
  pick: fc.nat(),
  stale: leasePick.map((l) => l.stale),
  progress: fc.boolean(),
  lines: fc.constantFrom(0, 1, 2, 3, 70),
  watched: fc.boolean(),
});

const outcomeKind = fc.constantFrom<OutcomeKind>(
  'successful',
  'successful',
  'result',
  'failed',
  'retry',
  'retry-later',
  'quarantine',
);
const target = fc.constantFrom<Target>('fitting', 'fitting', 'any', 'other queue');
const queue = fc.constantFrom(...QUEUES);
const lead = fc.constantFrom<Lead>('operator', 'enqueue');

const weighted: fc.WeightedArbitrary<ModelCommand>[] = [
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), fc.boolean())
      .map(([picks, unknown]) => new WatchCommand(picks, unknown)),
  },
  { weight: 14, arbitrary: runSpecs.map((items) => new EnqueueCommand(items, 'direct')) },
  { weight: 2, arbitrary: runSpecs.map((items) => new EnqueueCommand(items, 'lost')) },
  { weight: 8, arbitrary: dedupeSpecs.map((items) => new DedupeEnqueueCommand(items, 'direct')) },
  { weight: 2, arbitrary: dedupeSpecs.map((items) => new DedupeEnqueueCommand(items, 'lost')) },
  { weight: 8, arbitrary: claimSpec.map((claim) => new ClaimCommand(claim, 'plain')) },
  { weight: 5, arbitrary: claimSpec.map((claim) => new ClaimCommand(claim, 'waiter')) },
  { weight: 2, arbitrary: claimSpec.map((claim) => new ClaimCommand(claim, 'lost')) },
  { weight: 2, arbitrary: fc.tuple(claimSpec, runSpecs).map(([c, items]) => new WakeClaimCommand(c, items)) },
  { weight: 2, arbitrary: fc.tuple(claimSpec, claimSpec).map(([a, b]) => new TwoLostClaimsCommand(a, b)) },
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 12 : 2,
    arbitrary: fc
      .tuple(
        fc.array(fc.record({ pick: fc.nat(), stale: leasePick.map((l) => l.stale), kind: outcomeKind }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(leasePick, { maxLength: 2 }),
        fc.nat({ max: 4 }).map((n) => n === 0),
      )
      .map(([outcomes, marks, whole]) => new AcknowledgeCommand(outcomes, marks, whole, through)),
  })),
  {
    weight: 9,
    arbitrary: fc
      .tuple(leasePick, fc.constantFrom('announce' as const, 'start mark' as const, "consumer's start marks" as const))
      .map(([lease, how]) => new StartCommand(lease, how)),
  },
  { weight: 3, arbitrary: fc.array(leasePick, { minLength: 1, maxLength: 2 }).map((l) => new RenewCommand(l)) },
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 2 : 1,
    arbitrary: fc.array(reportSpec, { minLength: 1, maxLength: 3 }).map((items) => new ReportCommand(items, through)),
  })),
  { weight: 3, arbitrary: leasePick.map((lease) => new ReleaseCommand(lease)) },
  { weight: 1, arbitrary: leasePick.map((lease) => new ReleaseCommand(lease, 'lost')) },
  { weight: 2, arbitrary: leasePick.map((lease) => new DeferCommand(lease)) },
  { weight: 1, arbitrary: leasePick.map((lease) => new DeferCommand(lease, 'lost')) },
  { weight: 5, arbitrary: fc.nat().map((n) => new ExpireCommand(n)) },
  { weight: 5, arbitrary: fc.constant(new BrokerPassCommand()) },
  { weight: 3, arbitrary: fc.nat().map((n) => new MakeDueCommand(n)) },
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.nat(), fc.boolean(), fc.boolean())
      .map(([n, all, pass]) => new MakeTrimmableCommand(n, all, pass)),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(45 * MINUTE, 3 * HOUR, -45 * MINUTE, -3 * HOUR).map((d) => new ClockStepCommand(d)),
  },
  ...(['direct', 'lost'] as const).flatMap((through) => [
    {
      weight: through === 'direct' ? 3 : 2,
      arbitrary: fc.tuple(fc.nat(), target).map(([n, how]) => new RequeueCommand(n, how, through)),
    },
    {
      weight: through === 'direct' ? 3 : 2,
      arbitrary: fc.tuple(fc.nat(), target).map(([n, how]) => new DequeueCommand(n, how, through)),
    },
    { weight: through === 'direct' ? 2 : 1, arbitrary: queue.map((q) => new PurgeCommand(q, through)) },
  ]),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 3 : 1,
    arbitrary: fc
      .tuple(
        fc.nat(),
        outcomeKind,
        fc.nat({ max: 3 }).map((n) => n === 0),
      )
      .map(([n, late, trimmed]) => new CancelCommand(n, through, late, trimmed)),
  })),
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(), outcomeKind, fc.boolean())
      .map(([n, outcome, operatorFirst]) => new CancelRaceCommand(n, outcome, operatorFirst)),
  },
  { weight: 3, arbitrary: fc.tuple(fc.nat(), fc.boolean()).map(([n, purge]) => new MoveCommand(n, purge)) },
  {
    weight: 2,
    arbitrary: fc.tuple(queue, runSpecs, lead).map(([q, items, first]) => new PurgeRaceCommand(q, items, first)),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(), queue, runSpecs, lead)
      .map(([n, into, items, first]) => new DequeueRaceCommand(n, into, items, first)),
  },
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 2 : 1,
    arbitrary: fc
      .tuple(
        queue,
        fc.constantFrom('cap' as const, 'rate' as const),
        // Removed as often as set: a limit left in place for a whole sequence would starve other transitions.
        fc.option(fc.integer({ min: 1, max: 3 }), { freq: 2 }),
      )
      .map(([q, kind, value]) => new LimitCommand(q, { kind, value }, through)),
  })),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 6 : 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(TASK, TASK_ONCE),
        // Removed one time in three: a limit left in place would park most runs of the sequence.
        fc.option(
          fc
            .record({
              max: fc.option(fc.integer({ min: 1, max: 3 })),
              concurrency: fc.option(fc.integer({ min: 1, max: 2 })),
            })
            .map(({ max, concurrency }): TaskLimitChange => ({
              ...(max !== null ? { max } : {}),
              ...(concurrency !== null || max === null ? { concurrency: concurrency ?? 1 } : {}),
            })),
          { freq: 3 },
        ),
      )
      .map(([task, change]) => new TaskLimitCommand(task, change, through)),
  })),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 3 : 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(TASK, TASK_ONCE),
        queue,
        fc.constantFrom('rate' as const, 'cap' as const),
        fc.boolean(),
        fc.constantFrom<BurstEnd>('cancel', 'dequeue', 'raise', 'remove'),
      )
      .map(([task, q, limit, keyed, end]) => new GroupBurstCommand(task, q, limit, keyed, end, through)),
  })),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 3 : 1,
    arbitrary: fc
      .tuple(queue, fc.constantFrom('pause' as const, 'resume' as const))
      .map(([q, action]) => new PauseCommand(q, action, through)),
  })),
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.nat(), queue, fc.constantFrom(true, true, false), fc.constantFrom(0, 0, 1, 3))
      .map(([pick, q, overlap, limit]) => new UpsertScheduleCommand(pick, q, overlap, limit)),
  },
  {
    weight: 18,
    arbitrary: fc
      .tuple(fc.nat(), fc.constantFrom<FireMode>('one', 'one', 'twice', 'stale', 'lost'))
      .map(([pick, mode]) => new FireScheduleCommand(pick, mode)),
  },
  { weight: 2, arbitrary: fc.nat().map((pick) => new RemoveScheduleCommand(pick)) },
  {
    weight: 4,
    arbitrary: fc
      .record({
        forms: fc.array(fc.constantFrom('d1', 'd2', undefined), { minLength: 3, maxLength: 3 }),
        queues: fc.constantFrom<0 | 1 | 2>(0, 1, 2, 2),
      })
      .map((spec) => new DeclareSchedulesCommand(spec)),
  },
  { weight: 2, arbitrary: fc.constant(new DueSchedulesCommand()) },
  { weight: 2, arbitrary: fc.constant(new SnapshotCommand()) },
  { weight: 4, arbitrary: fc.constant(new RestoreCommand()) },
  { weight: 2, arbitrary: fc.nat({ max: 3 }).map((q) => new DeadWaiterCommand(q)) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(queue, fc.constantFrom(...CONSUMERS), fc.boolean())
      .map(([q, worker, requeue]) => new PoisonRunCommand(q, worker, requeue)),
  },
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.constantFrom(...CONSUMERS), fc.boolean())
      .map(([worker, started]) => new ConsumerDeathCommand(worker, started)),
  },
  ...flowCommands,
];

/** Every step, in one weighted arbitrary. */
export const modelCommands: fc.Arbitrary<ModelCommand>[] = [fc.oneof(...weighted)];
