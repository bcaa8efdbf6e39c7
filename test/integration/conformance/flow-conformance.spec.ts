import { FlowCycleError, InvalidFlowError, TaskStatus, type FlowSpec } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { FixtureError } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const WORKER = 'host:1:0';
const success = (returnValue: string) => ({ kind: 'successful', returnValue }) as const;
const failure = (message: string) =>
  ({ kind: 'failed', error: { errorClass: FixtureError.name, message, stack: '', attempt: 1 } }) as const;
const add = (a: number, b: number, after?: FlowSpec['nodes'][string]['after']) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;
const status = async (app: Subject, id: string) => (await app.queue.getResult(id)).status;

/** Claims what is ready and settles each run by `outcomeOf` (by run id); returns the ids claimed, and whether every outcome applied. */
async function settle(app: Subject, outcomeOf: (id: string) => ReturnType<typeof success | typeof failure>) {
  const leased = await app.backend.claim(['default'], 100, WORKER, 0);
  const acks = leased.map((run) => ({ id: run.id, queue: run.queue, token: run.token, outcome: outcomeOf(run.id) }));
  const applied = acks.length === 0 ? [] : await app.backend.acknowledge(acks);
  if (!applied.every(Boolean)) throw new Error(`an outcome was not applied: ${JSON.stringify(applied)}`);
  return leased.map((run) => run.id).sort();
}

// Flows driven by hand (claims and acknowledgements), then executed by workers.
describe.each(BACKENDS)('conformance: flows on the $name backend', (backend) => {
  const apps: Subject[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  async function producer(): Promise<Subject> {
    const app = await backend.producer();
    apps.push(app);
    return app;
  }
  async function executing(): Promise<Subject> {
    const app = await backend.executing();
    apps.push(app);
    return app;
  }
  it('stores a diamond whole: the root READY, the others WAITING where no claim looks, each readied once its dependencies settle', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) },
    });
    const { a, b, c, d } = flow.nodes as Record<string, string>;
    expect(await status(app, d!)).toBe(TaskStatus.WAITING);
    expect((await app.queue.getResult(d!)).flowId).toBe(flow.id);
    expect(await settle(app, () => success('2'))).toEqual([a]);
    expect(await settle(app, (id) => (id === b ? success('4') : success('6')))).toEqual([b, c].sort());
    expect(await status(app, d!)).toBe(TaskStatus.READY);
    expect(await settle(app, () => success('8'))).toEqual([d]);
    const stored = await app.backend.flows.load(flow.id);
    expect(stored).toMatchObject({ id: flow.id, state: 'SUCCESSFUL', open: 0 });
    expect(stored!.nodes.find((node) => node.id === d)).toMatchObject({
      name: 'd',
      queue: 'default',
      outcome: 'SUCCESSFUL',
      value: '8',
      after: [
        { id: b, onFailure: 'fail' },
        { id: c, onFailure: 'fail' },
      ],
    });
    expect(await app.backend.flows.dependencies(d!)).toEqual([
      { id: b, name: 'b', onFailure: 'fail', outcome: 'SUCCESSFUL', value: '4' },
      { id: c, name: 'c', onFailure: 'fail', outcome: 'SUCCESSFUL', value: '6' },
    ]);
  });

  it('fails the dependents of a failure without running them (uncharged), through every level, and ends the flow FAILED', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({ nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['b']) } });
    const { a, b, c } = flow.nodes as Record<string, string>;
    expect(await settle(app, () => failure('boom'))).toEqual([a]);
    for (const id of [b!, c!]) {
      const result = await app.queue.getResult(id);
      expect(result).toMatchObject({ status: TaskStatus.FAILED, attempts: 0 });
      expect(result.errors.map((error) => error.errorClass)).toEqual(['DependencyFailedError']);
    }
    expect(await app.backend.claim(['default'], 10, WORKER, 0)).toEqual([]);
    expect(await app.backend.flows.load(flow.id)).toMatchObject({ state: 'FAILED', open: 0 });
    expect((await app.backend.stats('default'))['failed']).toBe(3);
  });

  it('goes by each edge policy: ignore and remove wait for the rest, continue readies at once', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: {
        bad: add(0, 0),
        slow: add(0, 0, ['bad']),
        ignoring: add(1, 1, [{ node: 'bad', onFailure: 'ignore' }, 'slow']),
        removing: add(1, 1, [{ node: 'bad', onFailure: 'remove' }]),
        continuing: add(1, 1, [
          { node: 'bad', onFailure: 'continue' },
          { node: 'slow', onFailure: 'ignore' },
        ]),
      },
    });
    const { bad, slow, ignoring, removing, continuing } = flow.nodes as Record<string, string>;
    expect(await settle(app, () => failure('bad'))).toEqual([bad]);
    // `slow` fails by its edge (fail), and so does `ignoring` by its own edge to `slow`, ignored `bad` or not.
    expect(await status(app, slow!)).toBe(TaskStatus.FAILED);
    expect(await status(app, ignoring!)).toBe(TaskStatus.FAILED);
    expect(await status(app, removing!)).toBe(TaskStatus.READY);
    expect(await status(app, continuing!)).toBe(TaskStatus.READY);
    expect(await app.backend.flows.dependencies(continuing!)).toEqual([
      { id: bad, name: 'bad', onFailure: 'continue', outcome: 'FAILED', value: expect.stringContaining('"bad"') },
      { id: slow, name: 'slow', onFailure: 'ignore', outcome: 'FAILED', value: expect.stringContaining('Dependency') },
    ]);
  });

  it('readies a continue edge’s dependent at once, while its other dependency is still pending', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: { bad: add(0, 0), other: add(0, 0, ['bad2']), bad2: add(0, 0), after: add(1, 1) },
    });
    expect(Object.keys(flow.nodes).sort()).toEqual(['after', 'bad', 'bad2', 'other']);
    const second = await app.queue.enqueueFlow({
      nodes: {
        first: add(0, 0),
        pending: { task: 'MathService.add', args: [0, 0], delayMs: 60_000 },
        dependent: add(1, 1, [{ node: 'first', onFailure: 'continue' }, 'pending']),
      },
    });
    const { first, pending, dependent } = second.nodes as Record<string, string>;
    const leased = await app.backend.claim(['default'], 100, WORKER, 0);
    const mine = leased.find((run) => run.id === first)!;
    await app.backend.acknowledge([{ id: first!, queue: 'default', token: mine.token, outcome: failure('x') }]);
    expect(await status(app, dependent!)).toBe(TaskStatus.READY);
    const seen = await app.backend.flows.dependencies(dependent!);
    expect(seen.map(({ id, outcome }) => ({ id, outcome }))).toEqual([
      { id: first, outcome: 'FAILED' },
      { id: pending, outcome: undefined },
    ]);
  });

  it('cancels a WAITING node, which settles its dependents by their edges', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: {
        a: add(1, 1),
        b: add(2, 2, ['a']),
        c: add(3, 3, ['b']),
        d: add(4, 4, [{ node: 'b', onFailure: 'ignore' }]),
      },
    });
    const { b, c, d } = flow.nodes as Record<string, string>;
    expect(await app.queue.cancel(b!)).toEqual({ id: b, cancelled: true, previousStatus: TaskStatus.WAITING });
    expect(await status(app, b!)).toBe(TaskStatus.CANCELLED);
    expect(await status(app, c!)).toBe(TaskStatus.FAILED);
    // d's only dependency settled (ignored): READY.
    expect(await status(app, d!)).toBe(TaskStatus.READY);
  });

  it('cancels a whole flow: pending, WAITING and running nodes end CANCELLED, settled ones stay', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2), c: add(3, 3, ['a', 'b']), d: add(4, 4, ['c']) },
    });
    const { a, b, c, d } = flow.nodes as Record<string, string>;
    const leased = await app.backend.claim(['default'], 100, WORKER, 0);
    const leaseOf = (id: string) => leased.find((run) => run.id === id)!;
    await app.backend.acknowledge([{ id: a!, queue: 'default', token: leaseOf(a!).token, outcome: success('2') }]);
    expect(await app.queue.cancelFlow(flow.id)).toEqual({ cancelled: 3, state: 'CANCELLED' });
    expect(await status(app, a!)).toBe(TaskStatus.SUCCESSFUL);
    for (const id of [b!, c!, d!]) expect(await status(app, id)).toBe(TaskStatus.CANCELLED);
    // The running node's holder is stale now.
    expect(
      await app.backend.acknowledge([{ id: b!, queue: 'default', token: leaseOf(b!).token, outcome: success('4') }]),
    ).toEqual([false]);
    expect(await app.queue.cancelFlow(flow.id)).toEqual({ cancelled: 0, state: 'CANCELLED' });
  });

  it('purges a queue’s nodes as cancelled: their dependents, in its queue or others, are settled by policy first', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: {
        a: { ...add(1, 1), queue: 'emails' },
        b: { ...add(2, 2, ['a']), queue: 'emails' },
        failing: add(3, 3, ['b']),
        ignoring: add(4, 4, [{ node: 'a', onFailure: 'ignore' }]),
      },
    });
    const { a, b, failing, ignoring } = flow.nodes as Record<string, string>;
    expect((await app.inspector.counts(['emails']))[0]).toMatchObject({ ready: 1, waiting: 1 });
    expect(await app.backend.purge('emails')).toBe(2);
    expect(await app.backend.loadMany([a!, b!])).toEqual([null, null]);
    expect(await status(app, failing!)).toBe(TaskStatus.FAILED);
    expect(await status(app, ignoring!)).toBe(TaskStatus.READY);
    expect((await app.inspector.counts(['emails']))[0]).toMatchObject({ ready: 0, waiting: 0 });
    // `a` went as cancelled; `b`, failed by its edge to `a`, went as a failure of the queue's.
    const outcomes = Object.fromEntries((await app.backend.flows.load(flow.id))!.nodes.map((n) => [n.name, n.outcome]));
    expect(outcomes).toEqual({ a: 'CANCELLED', b: 'FAILED', failing: 'FAILED', ignoring: undefined });
  });

  it('purges a node its own purge readies (stored before the purge began), wherever the walk of its queue is', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: {
        a: { ...add(1, 1), queue: 'emails' },
        b: { ...add(2, 2, [{ node: 'a', onFailure: 'ignore' }]), queue: 'emails' },
        c: { ...add(3, 3, [{ node: 'b', onFailure: 'continue' }]), queue: 'emails', delayMs: 60_000 },
      },
    });
    expect(await app.backend.purge('emails')).toBe(3);
    expect(await app.backend.loadMany(Object.values(flow.nodes))).toEqual([null, null, null]);
    expect((await app.inspector.counts(['emails']))[0]).toMatchObject({ ready: 0, deferred: 0, waiting: 0 });
    expect(await app.backend.flows.load(flow.id)).toMatchObject({ state: 'FAILED', open: 0 });
  });

  it('holds nodes to their task’s limits and priorities once READY, as runs', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({
      nodes: {
        first: { task: 'LimitedService.onePerCustomer', args: ['acme', 1] },
        second: { task: 'LimitedService.onePerCustomer', args: ['acme', 2] },
        urgent: { task: 'MathService.add', args: [1, 1], priority: 5, after: ['low'] },
        low: add(0, 0),
      },
      partitionKey: 'limits',
    });
    const leased = await app.backend.claim(['default'], 10, WORKER, 0);
    // One run of the customer's group at once, whatever the flow.
    expect(leased.map((run) => run.id).sort()).toEqual([flow.nodes['first'], flow.nodes['low']].sort());
    const low = leased.find((run) => run.id === flow.nodes['low'])!;
    await app.backend.acknowledge([{ id: low.id, queue: 'default', token: low.token, outcome: success('0') }]);
    await app.queue.enqueue('MathService.add', [9, 9], { partitionKey: 'limits' });
    // The readied node keeps its priority: it comes before a run enqueued after it at the default priority.
    const [next] = await app.backend.claim(['default'], 1, WORKER, 0);
    expect(next!.id).toBe(flow.nodes['urgent']);
  });

  it('refuses a cycle, naming it, and other bad flows, storing nothing', async () => {
    const app = await producer();
    const cycle = app.queue.enqueueFlow({ nodes: { a: add(1, 1, ['c']), b: add(1, 1, ['a']), c: add(1, 1, ['b']) } });
    await expect(cycle).rejects.toBeInstanceOf(FlowCycleError);
    await expect(cycle).rejects.toMatchObject({ cycle: ['a', 'c', 'b'] });
    await expect(cycle).rejects.toThrow(
      'its dependencies form a cycle: "a" waits for "c" waits for "b" waits for "a".',
    );
    await expect(app.queue.enqueueFlow({ nodes: { a: add(1, 1, ['nope']) } })).rejects.toThrow(
      /node "a" waits for "nope", which is no node of the flow/,
    );
    await expect(
      app.queue.enqueueFlow({ nodes: { a: { task: 'MathService.add', args: [1, 1], id: 'mine' } as never } }),
    ).rejects.toBeInstanceOf(InvalidFlowError);
    await expect(
      app.queue.enqueueFlow({ nodes: { a: add(1, 1, [{ node: 'a', onFailure: 'skip' as never }]) } }),
    ).rejects.toThrow(/onFailure of "a" is "skip"; it is one of fail, ignore, continue, remove/);
    await expect(
      app.queue.enqueueFlow({ nodes: { a: add(1, 1), b: { task: 'MathService.add', args: 'x' as never } } }),
    ).rejects.toThrow(/node "b": Cannot enqueue "MathService.add": args must be an array/);
    expect((await app.backend.stats('default'))['enqueued'] ?? 0).toBe(0);
  });

  it('runs a chain and a batch end to end: each node reads its dependencies, the batch callback runs once', async () => {
    const app = await executing();
    const chain = await app.queue.enqueueChain([
      { task: 'MathService.add', args: [1, 2] },
      { task: 'FlowService.sum', args: [10] },
      { task: 'FlowService.sum', args: [100] },
    ]);
    const chained = await app.queue.waitForFlow(chain.id, { timeoutMs: 20_000 });
    expect(chained.state).toBe('SUCCESSFUL');
    expect(chained.nodes['2']!.returnValue).toBe(113);

    const batch = await app.queue.enqueueBatch({
      runs: [
        { task: 'MathService.add', args: [1, 1] },
        { task: 'FailService.alwaysFail', args: ['no'] },
        { task: 'MathService.add', args: [2, 2] },
      ],
      onComplete: { task: 'FlowService.seen', args: [] },
      onSuccess: { task: 'FlowService.seen', args: [] },
    });
    const done = await app.queue.waitForFlow(batch.id, { timeoutMs: 20_000 });
    expect(done.state).toBe('FAILED');
    expect(done.nodes['onComplete']!.returnValue).toEqual([
      { name: 'run-0', status: 'SUCCESSFUL', result: 2 },
      { name: 'run-1', status: 'FAILED', errorClass: 'FixtureError' },
      { name: 'run-2', status: 'SUCCESSFUL', result: 4 },
    ]);
    expect(done.nodes['onSuccess']).toMatchObject({ status: TaskStatus.FAILED, attempts: 0 });
  });

  it('lets a batch’s run add runs to it: the callback waits for them and lists them', async () => {
    const app = await executing();
    const batch = await app.queue.enqueueBatch({
      runs: [
        { task: 'FlowService.spread', args: [2] },
        { task: 'MathService.add', args: [1, 1] },
      ],
      onComplete: { task: 'FlowService.seen', args: [] },
    });
    const done = await app.queue.waitForFlow(batch.id, { timeoutMs: 20_000 });
    expect(done.state).toBe('SUCCESSFUL');
    expect(Object.keys(done.nodes).sort()).toEqual(['added-0', 'added-1', 'onComplete', 'run-0', 'run-1']);
    expect(done.nodes['onComplete']!.returnValue).toEqual([
      { name: 'run-0', status: 'SUCCESSFUL', result: 2 },
      { name: 'run-1', status: 'SUCCESSFUL', result: 2 },
      { name: 'added-0', status: 'SUCCESSFUL', result: 100 },
      { name: 'added-1', status: 'SUCCESSFUL', result: 101 },
    ]);
  });

  it('adds to a flow only under the caller’s lease, and only from a flow node', async () => {
    const app = await producer();
    const flow = await app.queue.enqueueFlow({ nodes: { a: add(1, 1), b: add(2, 2, ['a']) } });
    const plain = await app.queue.enqueue('MathService.add', [1, 1]);
    const leased = await app.backend.claim(['default'], 10, WORKER, 0);
    const lease = leased.find((run) => run.id === flow.nodes['a'])!;
    const newRun = {
      id: app.backend.newRunIdBeside(lease.id),
      queue: 'default',
      priority: 0,
      runAt: 0,
      delayMs: 0,
      leaseTtlMs: 0,
      payload: '{"task":"MathService.add","args":[1,1]}',
      idempotent: false,
    };
    expect(await app.backend.flows.extend({ ...lease, token: 'stale' }, [{ run: newRun, name: 'x', after: [] }])).toBe(
      'lost',
    );
    const other = leased.find((run) => run.id === plain.id)!;
    expect(await app.backend.flows.extend(other, [{ run: newRun, name: 'x', after: [] }])).toBe('not-a-node');
    expect(await app.backend.loadMany([newRun.id])).toEqual([null]);
    expect(await app.backend.flows.extend(lease, [{ run: newRun, name: 'x', after: [] }])).toBe('added');
    expect((await app.backend.flows.load(flow.id))!.nodes.find((n) => n.id === flow.nodes['b'])!.after).toEqual([
      { id: flow.nodes['a'], onFailure: 'fail' },
      { id: newRun.id, onFailure: 'fail' },
    ]);
  });
});
