import { InvalidInspectionError, TaskInspector, TaskStatus, type FlowSpec } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';

const add = (a: number, b: number, after?: FlowSpec['nodes'][string]['after']) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;
const DIAMOND = { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) };

describe('a flow in the telemetry API (TaskInspector.flow)', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const app = await Harness.start(...args);
    apps.push(app);
    return app;
  }

  it('shows a diamond with each node after its dependencies, live statuses, counts and edges', async () => {
    const producer = await start();
    const inspector = producer.module.get(TaskInspector);
    const flow = await producer.queue.enqueueFlow({ nodes: DIAMOND });
    const ids = flow.nodes as Record<'a' | 'b' | 'c' | 'd', string>;
    const byId = (x: string, y: string) => (ids[x as 'a'] < ids[y as 'a'] ? -1 : 1);

    const view = await inspector.flow(flow.id);
    expect(view).toMatchObject({ id: flow.id, state: 'RUNNING', finishedAt: null, edges: 4 });
    expect(view!.createdAt).toBeInstanceOf(Date);
    expect(view!.counts).toEqual({ [TaskStatus.READY]: 1, [TaskStatus.WAITING]: 3 });
    // The root first, the sink last, the two between by run id.
    expect(view!.nodes.map((node) => node.name)).toEqual(['a', ...['b', 'c'].sort(byId), 'd']);
    const d = view!.nodes.at(-1)!;
    expect(d).toEqual({
      id: ids.d,
      name: 'd',
      queue: 'default',
      task: 'MathService.add',
      status: TaskStatus.WAITING,
      live: true,
      after: [
        { id: ids.b, name: 'b', onFailure: 'fail' },
        { id: ids.c, name: 'c', onFailure: 'fail' },
      ],
      depth: 2,
      enqueuedAt: expect.any(Date),
      startedAt: null,
      finishedAt: null,
      attempts: 0,
    });
    expect(view!.nodes.map((node) => node.depth)).toEqual([0, 1, 1, 2]);

    await start({ worker: { concurrency: 2 }, options: { alias: producer.alias } });
    expect((await producer.queue.waitForFlow(flow.id, { timeoutMs: 15_000 })).state).toBe('SUCCESSFUL');
    const done = await inspector.flow(flow.id);
    expect(done).toMatchObject({ state: 'SUCCESSFUL', counts: { [TaskStatus.SUCCESSFUL]: 4 } });
    expect(done!.finishedAt).toBeInstanceOf(Date);
    for (const node of done!.nodes) {
      expect(node).toMatchObject({ status: TaskStatus.SUCCESSFUL, live: true, attempts: 1 });
      expect(node.startedAt!.getTime()).toBeLessThanOrEqual(node.finishedAt!.getTime());
    }
    // Each node started only once its dependencies had finished.
    const finished = new Map(done!.nodes.map((node) => [node.id, node.finishedAt!.getTime()]));
    for (const node of done!.nodes) {
      for (const dependency of node.after) {
        expect(node.startedAt!.getTime()).toBeGreaterThanOrEqual(finished.get(dependency.id)!);
      }
    }
  });

  it('shows the outcome its flow recorded for a node whose run record is gone (trimmed or dequeued)', async () => {
    // Successes are not kept: a's record goes at its acknowledgement.
    const producer = await start({ options: { resultTtlMs: { successful: 0 } } });
    const inspector = producer.module.get(TaskInspector);
    const flow = await producer.queue.enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, [{ node: 'a', onFailure: 'ignore' }]) },
    });
    const ids = flow.nodes as Record<'a' | 'b' | 'c', string>;
    const [lease] = await producer.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(lease?.id).toBe(ids.a);
    await producer.backend.acknowledge([
      { id: ids.a, queue: 'default', token: lease!.token, outcome: { kind: 'successful', returnValue: '2' } },
    ]);
    await inspector.dequeue(ids.b);

    const view = await inspector.flow(flow.id);
    const byName = Object.fromEntries(view!.nodes.map((node) => [node.name, node]));
    expect(byName['a']).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      live: false,
      task: null,
      attempts: null,
      enqueuedAt: null,
      depth: 0,
    });
    expect(byName['b']).toMatchObject({ status: TaskStatus.CANCELLED, live: false, task: null, depth: 1 });
    expect(byName['c']).toMatchObject({ status: TaskStatus.READY, live: true, task: 'MathService.add' });
    expect(byName['c']!.after).toEqual([{ id: ids.a, name: 'a', onFailure: 'ignore' }]);
    expect(view!.counts).toEqual({ [TaskStatus.SUCCESSFUL]: 1, [TaskStatus.CANCELLED]: 1, [TaskStatus.READY]: 1 });
  });

  it('answers null for a flow that does not exist, and refuses an id that cannot be one', async () => {
    const inspector = (await start({ options: { alias: uniqueAlias('flows') } })).module.get(TaskInspector);
    expect(await inspector.flow('no-such-flow')).toBeNull();
    await expect(inspector.flow('')).rejects.toThrow(InvalidInspectionError);
    await expect(inspector.flow('x'.repeat(201))).rejects.toThrow(/is not a flow id \(1-200 characters\)/);
  });
});
