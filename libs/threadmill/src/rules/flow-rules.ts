import type { FailurePolicy, FlowOutcomeStatus, FlowState } from '../records/flow-records.js';

/**
 * The rules of flows (`docs/flows.md`), as plain functions: what a
 * dependency's outcome does to a WAITING dependent, and the state a flow ends
 * in. The one TypeScript statement of the rules `lua/includes/flow-settle.lua`
 * implements, run by the in-memory backend and applied by the model-based
 * test's model.
 */

/** What an edge does to its WAITING dependent when its dependency ends: count it settled, ready it now, or fail it. */
export type EdgeEffect = 'satisfy' | 'ready' | 'fail';

/** The edge's effect (flow-settle.lua, edgeEffect): a success satisfies any edge; a failure goes by the policy. */
export function edgeEffect(policy: FailurePolicy, outcome: FlowOutcomeStatus): EdgeEffect {
  if (outcome === 'SUCCESSFUL' || policy === 'ignore' || policy === 'remove') return 'satisfy';
  return policy === 'continue' ? 'ready' : 'fail';
}

/** A flow's end once no node is open (flow-settle.lua, finishFlow). */
export function finishedFlowState(cancelled: boolean, failedNodes: number): FlowState {
  if (cancelled) return 'CANCELLED';
  return failedNodes > 0 ? 'FAILED' : 'SUCCESSFUL';
}

/** Whether a dependency is listed in its dependent's `context.dependencies()`: a removed edge's failure is not. */
export function listedDependency(policy: FailurePolicy, outcome: FlowOutcomeStatus | undefined): boolean {
  return !(policy === 'remove' && outcome !== undefined && outcome !== 'SUCCESSFUL');
}

/** The one-letter code of a policy in storage (`then` and `e:` entries). */
export function policyCode(policy: FailurePolicy): string {
  return policy[0]!;
}

/** The policy of a one-letter code. */
export function policyOfCode(code: string): FailurePolicy {
  const policy = ({ f: 'fail', i: 'ignore', c: 'continue', r: 'remove' } as const)[code];
  if (policy === undefined) throw new Error(`Unknown failure policy code ${JSON.stringify(code)} in a stored flow.`);
  return policy;
}

/** The outcome of a stored letter (S, F, Q, C), or undefined for none yet. */
export function outcomeOfLetter(letter: string): FlowOutcomeStatus | undefined {
  return ({ S: 'SUCCESSFUL', F: 'FAILED', Q: 'QUARANTINED', C: 'CANCELLED' } as const)[letter];
}
