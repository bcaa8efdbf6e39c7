import { InvalidFlowError } from './invalid-flow.error.js';

/** A flow's dependencies form a cycle, so none of its nodes could ever start; nothing was written to Redis. */
export class FlowCycleError extends InvalidFlowError {
  /** @param cycle node names, each waiting for the next, the last for the first */
  constructor(readonly cycle: readonly string[]) {
    super(
      `its dependencies form a cycle: ${[...cycle, cycle[0]].map((name) => JSON.stringify(name)).join(' waits for ')}. ` +
        'A node may depend only on nodes that do not depend on it, directly or through others.',
    );
  }
}
