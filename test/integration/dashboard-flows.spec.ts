import { TaskQueue, TaskStatus } from '@threadmill/nestjs';
import type { DashboardFlow } from '@threadmill/nestjs/dashboard';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { call, DashboardTestbed } from '../support/dashboard.js';

const add = (a: number, b: number, after?: string[]) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;

describe("the web dashboard's flow route (api/flows)", () => {
  const bed = new DashboardTestbed();
  afterEach(() => bed.closeAll());

  it('answers a flow with its nodes in dependency order, by path and by query, and 404 for an unknown one', async () => {
    const alias = uniqueAlias('dash');
    const { app, url } = await bed.startDashboard(alias);
    const flow = await app.get(TaskQueue).enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) },
    });

    const { status, body } = await call<DashboardFlow>(`${url}/api/flows/${flow.id}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: flow.id, state: 'RUNNING', finishedAt: null, edges: 4 });
    expect(body.counts).toEqual({ [TaskStatus.READY]: 1, [TaskStatus.WAITING]: 3 });
    expect(body.nodes.map((node) => [node.name, node.depth, node.status])).toEqual([
      ['a', 0, TaskStatus.READY],
      ...[
        ['b', 1, TaskStatus.WAITING],
        ['c', 1, TaskStatus.WAITING],
      ].sort((x, y) => (flow.nodes[x[0] as string]! < flow.nodes[y[0] as string]! ? -1 : 1)),
      ['d', 2, TaskStatus.WAITING],
    ]);
    expect(body.nodes.at(-1)).toMatchObject({
      id: flow.nodes['d'],
      task: 'MathService.add',
      queue: 'default',
      after: [
        { id: flow.nodes['b'], name: 'b', onFailure: 'fail' },
        { id: flow.nodes['c'], name: 'c', onFailure: 'fail' },
      ],
    });
    // Dates travel as ISO strings.
    expect(typeof body.createdAt).toBe('string');

    const byQuery = await call<DashboardFlow>(`${url}/api/flows?id=${encodeURIComponent(flow.id)}`);
    expect(byQuery).toMatchObject({ status: 200, body: { id: flow.id } });

    const unknown = await call(`${url}/api/flows/no-such-flow`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe(
      `No flow "no-such-flow" on backend "${alias}": it never existed, or it ended and its record expired ` +
        '(a flow is kept as long as the results of its runs).',
    );
    const unnamed = await call(`${url}/api/flows`);
    expect(unnamed).toMatchObject({
      status: 400,
      body: { message: 'Name the flow: api/flows/<id> or api/flows?id=<id>.' },
    });
    const long = await call(`${url}/api/flows?id=${'x'.repeat(201)}`);
    expect(long).toMatchObject({ status: 400, body: { message: expect.stringMatching(/is not a flow id \(1-200/) } });
  });

  it("gives a flow node's run its flow id, which the page links to", async () => {
    const alias = uniqueAlias('dash');
    const { app, url } = await bed.startDashboard(alias);
    const flow = await app.get(TaskQueue).enqueueChain([add(1, 1), add(2, 2)]);
    const run = await call(`${url}/api/runs/${flow.nodes['1']}`);
    expect(run.body).toMatchObject({ id: flow.nodes['1'], flowId: flow.id, status: TaskStatus.WAITING });
  });
});
