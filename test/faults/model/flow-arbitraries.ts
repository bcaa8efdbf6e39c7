import * as fc from 'fast-check';
import { FAILURE_POLICIES } from '../../../libs/threadmill/src/records/flow-records.js';
import {
  ClaimNodesCommand,
  EnqueueFlowCommand,
  RunFlowsCommand,
  SettleNodesCommand,
  type NodeSpec,
} from './flow-commands.js';
import {
  CancelFlowCommand,
  CancelNodeCommand,
  DequeueNodeCommand,
  RequeueNodeCommand,
  type NodeTarget,
} from './flow-operator-commands.js';
import { FLOW_QUEUES } from './flow-model.js';
import type { OutcomeKind } from './lease-transitions.js';
import type { ModelCommand } from './model-command.js';

/**
 * The flow steps of a sequence, weighted (together about an eighth of the
 * steps): enough flows stored that claims and outcomes find nodes, and each
 * flow often driven to its end.
 */

const nodeSpec: fc.Arbitrary<NodeSpec> = fc.record({
  queue: fc.constantFrom(...FLOW_QUEUES),
  priority: fc.constantFrom(0, 0, 1),
  delayed: fc.nat({ max: 11 }).map((n) => n === 0),
  watched: fc.nat({ max: 3 }).map((n) => n === 0),
  // Edges to 0..3 earlier nodes: fail (the default) and continue (which readies a node whose other
  // dependencies are pending) twice as often as ignore and remove.
  after: fc.array(
    fc.record({
      pick: fc.nat(),
      onFailure: fc.constantFrom('fail' as const, 'continue' as const, ...FAILURE_POLICIES),
    }),
    { maxLength: 3 },
  ),
});
const dag = fc.array(nodeSpec, { minLength: 2, maxLength: 8 });

/** Outcomes of nodes: mostly successes (so that flows go on), each failure kind often enough. */
const outcomeKind = fc.constantFrom<OutcomeKind>('successful', 'successful', 'result', 'failed', 'quarantine', 'retry');
const target = fc.constantFrom<NodeTarget>('fitting', 'fitting', 'fitting', 'any', 'other queue');

export const flowCommands: fc.WeightedArbitrary<ModelCommand>[] = [
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 4 : 1,
    arbitrary: dag.map((specs) => new EnqueueFlowCommand(specs, through)),
  })),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 3 : 1,
    arbitrary: fc
      .tuple(fc.nat({ max: 3 }), fc.integer({ min: 1, max: 4 }), fc.nat({ max: 1 }), fc.boolean())
      .map(([queues, count, offset, started]) => new ClaimNodesCommand(queues, count, offset, started, through)),
  })),
  ...(['direct', 'lost'] as const).map((through) => ({
    weight: through === 'direct' ? 4 : 2,
    arbitrary: fc
      .tuple(
        fc.array(fc.record({ pick: fc.nat(), stale: fc.nat({ max: 4 }).map((n) => n === 0), kind: outcomeKind }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.nat({ max: 4 }).map((n) => n === 0),
      )
      .map(([outcomes, whole]) => new SettleNodesCommand(outcomes, whole, through)),
  })),
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        // One run in three of successes only, so that flows end SUCCESSFUL too.
        fc.oneof(
          fc.constant<OutcomeKind[]>(['successful', 'result']),
          fc.array(outcomeKind, { minLength: 1, maxLength: 4 }),
          fc.array(outcomeKind, { minLength: 1, maxLength: 4 }),
        ),
        fc.array(fc.nat(), { minLength: 2, maxLength: 4 }),
      )
      .map(([kinds, order]) => new RunFlowsCommand(kinds, order, 8)),
  },
  ...(['direct', 'lost'] as const).flatMap((through) => [
    {
      weight: through === 'direct' ? 2 : 1,
      arbitrary: fc
        .tuple(fc.nat(), fc.oneof(target, fc.constant<NodeTarget>('leased')))
        .map(([pick, how]) => new CancelNodeCommand(pick, how, through)),
    },
    {
      weight: through === 'direct' ? 2 : 1,
      arbitrary: fc.tuple(fc.nat(), target).map(([pick, how]) => new DequeueNodeCommand(pick, how, through)),
    },
    {
      weight: through === 'direct' ? 2 : 1,
      arbitrary: fc
        .tuple(
          fc.nat(),
          fc.constantFrom('running' as const, 'running' as const, 'any' as const, 'unknown' as const),
          fc.boolean(),
        )
        .map(([pick, how, claimFirst]) => new CancelFlowCommand(pick, how, claimFirst, through)),
    },
  ]),
  {
    weight: 3,
    arbitrary: fc.tuple(fc.nat(), fc.boolean()).map(([pick, thenRun]) => new RequeueNodeCommand(pick, thenRun)),
  },
];
