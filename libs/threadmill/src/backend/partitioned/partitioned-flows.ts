import type { FlowStore } from '../flow-store.js';
import type { LeaseRef } from '../../records/backend-records.js';
import type { FlowState, NewFlow, NewFlowNode, StoredDependency, StoredFlow } from '../../records/flow-records.js';
import type { PartitionSet } from './partition-set.js';

/**
 * The flows of a partitioned backend: a flow lives whole in one partition,
 * the one its id routes to, and so do its nodes (the queue names them from
 * the same key: `TaskQueue.enqueueFlow`), so every flow script stays
 * single-slot (`docs/scale-out.md`, "Flows").
 */
export class PartitionedFlowStore implements FlowStore {
  constructor(
    private readonly set: PartitionSet,
    private readonly partitionOf: (id: string) => number,
  ) {}

  store(flow: NewFlow): Promise<{ now: number; created: boolean }> {
    const p = this.partitionOf(flow.id);
    const stray = flow.nodes.find((node) => this.partitionOf(node.run.id) !== p);
    if (stray !== undefined) {
      throw new Error(
        `Flow ${flow.id} holds node ${stray.run.id} of another partition: name a flow's nodes with the key of its id (TaskQueue.enqueueFlow does).`,
      );
    }
    return this.set.watched(p, (part) => part.flows.store(flow));
  }

  load(id: string): Promise<StoredFlow | null> {
    return this.set.watched(this.partitionOf(id), (part) => part.flows.load(id));
  }

  dependencies(runId: string): Promise<StoredDependency[]> {
    return this.set.watched(this.partitionOf(runId), (part) => part.flows.dependencies(runId));
  }

  cancel(id: string): Promise<{ cancelled: number; state: FlowState | null }> {
    return this.set.watched(this.partitionOf(id), (part) => part.flows.cancel(id));
  }

  extend(caller: LeaseRef, nodes: readonly NewFlowNode[]): Promise<'added' | 'lost' | 'not-a-node'> {
    return this.set.watched(this.partitionOf(caller.id), (part) => part.flows.extend(caller, nodes));
  }
}
