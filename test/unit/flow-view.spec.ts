import { TaskStatus } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';
import { assembleFlowView, flowDepths } from '../../libs/threadmill/src/inspector/flow-view.js';
import type { StoredFlow, StoredFlowNode } from '../../libs/threadmill/src/records/flow-records.js';

/** A node `id` (also its name) on `default` after `after` (ids), each edge `fail`. */
const node = (id: string, after: string[] = [], outcome?: StoredFlowNode['outcome']): StoredFlowNode => ({
  id,
  name: `n-${id}`,
  queue: 'default',
  after: after.map((dependency) => ({ id: dependency, onFailure: 'fail' })),
  ...(outcome ? { outcome } : {}),
});

const flowOf = (nodes: StoredFlowNode[]): StoredFlow => ({
  id: 'f',
  state: 'RUNNING',
  createdAt: 1_000,
  open: 0,
  nodes,
});

/** Whether every node of `order` comes after each of its dependencies. */
const topological = (order: readonly { id: string; after: readonly { id: string }[] }[]) =>
  order.every((n, i) => n.after.every((edge) => order.findIndex((m) => m.id === edge.id) < i));

describe('the view of a flow (assembleFlowView)', () => {
  it('orders nodes by depth (the longest path to them), then by id, whatever order the flow stored them in', () => {
    // 5 -> 1 -> 3, 5 -> 3, 2 alone, 4 after 2 and 3.
    const nodes = [node('4', ['2', '3']), node('3', ['1', '5']), node('2'), node('1', ['5']), node('5')];
    const view = assembleFlowView(
      flowOf(nodes),
      nodes.map(() => null),
    );
    expect(view.nodes.map((n) => [n.id, n.depth])).toEqual([
      ['2', 0],
      ['5', 0],
      ['1', 1],
      ['3', 2],
      ['4', 3],
    ]);
    expect(topological(view.nodes)).toBe(true);
    expect(view.edges).toBe(5);
    expect(view.nodes.find((n) => n.id === '4')!.after).toEqual([
      { id: '2', name: 'n-2', onFailure: 'fail' },
      { id: '3', name: 'n-3', onFailure: 'fail' },
    ]);
  });

  it("falls back to each gone run's recorded outcome, and counts statuses it knows", () => {
    const nodes = [node('a', [], 'SUCCESSFUL'), node('b', ['a'], 'FAILED'), node('c', ['a'])];
    const view = assembleFlowView({ ...flowOf(nodes), finishedAt: 2_000 }, [null, null, null]);
    expect(view.nodes.map((n) => [n.name, n.status, n.live])).toEqual([
      ['n-a', TaskStatus.SUCCESSFUL, false],
      ['n-b', TaskStatus.FAILED, false],
      ['n-c', null, false],
    ]);
    expect(view.counts).toEqual({ [TaskStatus.SUCCESSFUL]: 1, [TaskStatus.FAILED]: 1 });
    expect([view.createdAt.getTime(), view.finishedAt!.getTime()]).toEqual([1_000, 2_000]);
  });

  it('places nodes it cannot reach (a cycle, which a stored flow never has) below the rest, and ignores edges out of the flow', () => {
    const depths = flowDepths([node('a'), node('b', ['a', 'elsewhere']), node('x', ['y']), node('y', ['x'])]);
    expect(Object.fromEntries(depths)).toEqual({ a: 0, b: 1, x: 2, y: 2 });
  });
});
