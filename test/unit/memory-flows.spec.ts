import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import type { FailurePolicy, FlowEdge, NewFlow } from '../../libs/threadmill/src/records/flow-records.js';
import type { ResultTtl } from '../../libs/threadmill/src/records/result-ttl.js';
import { TaskStatus } from '../../libs/threadmill/src/records/task-status.enum.js';
import { InMemoryTaskBackend } from '../../libs/threadmill/src/testing/memory/in-memory.backend.js';

const WORKER = 'host:1:0';
const QUEUE = 'default';
const success = (returnValue?: string): Outcome => ({ kind: 'successful', returnValue });
const failure = (message: string): Outcome => ({
  kind: 'failed',
  error: { errorClass: 'Error', message, stack: '', attempt: 1 },
});

function backend(resultTtlMs: ResultTtl = 60_000): InMemoryTaskBackend {
  return new InMemoryTaskBackend({ leaseTtlMs: 30_000, resultTtlMs, batchSize: 100 });
}

/** A flow of nodes named by their run ids, each `[id, its dependencies, its queue?]` (a bare id: onFailure fail). */
function flowOf(id: string, nodes: [string, (string | [string, FailurePolicy])[], string?][]): NewFlow {
  return {
    id,
    nodes: nodes.map(([nodeId, deps, queue = QUEUE]) => ({
      run: {
        id: nodeId,
        queue,
        priority: 0,
        runAt: 0,
        delayMs: 0,
        leaseTtlMs: 0,
        payload: '{}',
        idempotent: false,
      },
      name: `node-${nodeId}`,
      after: deps.map((dep): FlowEdge =>
        typeof dep === 'string' ? { id: dep, onFailure: 'fail' } : { id: dep[0], onFailure: dep[1] },
      ),
    })),
  };
}

/** Claims every ready run and settles each by `outcomeOf`; returns the ids claimed, sorted. */
async function settle(memory: InMemoryTaskBackend, outcomeOf: (id: string) => Outcome): Promise<string[]> {
  const leased = await memory.claim([QUEUE], 100, WORKER, 0);
  const acks = leased.map((run) => ({ id: run.id, queue: run.queue, token: run.token, outcome: outcomeOf(run.id) }));
  expect(await memory.acknowledge(acks)).toEqual(acks.map(() => true));
  return leased.map((run) => run.id).sort();
}

async function statuses(memory: InMemoryTaskBackend, ids: string[]): Promise<(string | undefined)[]> {
  return (await memory.loadMany(ids)).map((run) => run?.['status']);
}

describe('the in-memory flow store', () => {
  it('keeps a diamond’s join WAITING until both its dependencies succeed, then READY', async () => {
    const memory = backend();
    expect(
      await memory.flows.store(
        flowOf('f1', [
          ['a', []],
          ['b', ['a']],
          ['c', ['a']],
          ['d', ['b', 'c']],
        ]),
      ),
    ).toMatchObject({
      created: true,
    });
    expect(await statuses(memory, ['b', 'c', 'd'])).toEqual([
      TaskStatus.WAITING,
      TaskStatus.WAITING,
      TaskStatus.WAITING,
    ]);
    expect((await memory.load('d'))!['flow']).toBe('f1');
    expect((await memory.counts([QUEUE]))[0]).toMatchObject({ waiting: 3, ready: 1 });
    expect(await memory.list(QUEUE, 'waiting', 0, 10)).toEqual(['b', 'c', 'd']);
    expect(await settle(memory, () => success('1'))).toEqual(['a']);
    expect(await settle(memory, (id) => success(id === 'b' ? '"b"' : undefined))).toEqual(['b', 'c']);
    expect(await statuses(memory, ['d'])).toEqual([TaskStatus.READY]);
    expect((await memory.counts([QUEUE]))[0]).toMatchObject({ waiting: 0, ready: 1 });
    expect(await memory.flows.dependencies('d')).toEqual([
      { id: 'b', name: 'node-b', onFailure: 'fail', outcome: 'SUCCESSFUL', value: '"b"' },
      { id: 'c', name: 'node-c', onFailure: 'fail', outcome: 'SUCCESSFUL', value: '' },
    ]);
    expect(await memory.flows.load('f1')).toMatchObject({ state: 'RUNNING', open: 1 });
    expect(await settle(memory, () => success())).toEqual(['d']);
    const stored = await memory.flows.load('f1');
    expect(stored).toMatchObject({ id: 'f1', state: 'SUCCESSFUL', open: 0, finishedAt: expect.any(Number) });
    expect(stored!.nodes.map((node) => [node.id, node.outcome])).toEqual([
      ['a', 'SUCCESSFUL'],
      ['b', 'SUCCESSFUL'],
      ['c', 'SUCCESSFUL'],
      ['d', 'SUCCESSFUL'],
    ]);
    expect(stored!.nodes[3]).toMatchObject({ name: 'node-d', queue: QUEUE, after: [{ id: 'b' }, { id: 'c' }] });
  });

  it('stores a flow id once: a second store writes nothing', async () => {
    const memory = backend();
    await memory.flows.store(flowOf('f1', [['a', []]]));
    expect(await memory.flows.store(flowOf('f1', [['x', []]]))).toMatchObject({ created: false });
    expect(await memory.load('x')).toBeNull();
    expect((await memory.stats(QUEUE))['enqueued']).toBe(1);
  });

  it('fails the dependents of a failure through two levels, uncharged, counted, and ends the flow FAILED', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', ['a']],
        ['c', ['b']],
      ]),
    );
    expect(await settle(memory, () => failure('boom'))).toEqual(['a']);
    const [b, c] = await memory.loadMany(['b', 'c']);
    expect(b).toMatchObject({ status: TaskStatus.FAILED });
    expect(b!['attempts']).toBeUndefined();
    expect(JSON.parse(`[${b!['errors']}]`)).toEqual([
      {
        errorClass: 'DependencyFailedError',
        message: 'Dependency a ended FAILED and its edge fails this node (onFailure: fail)',
        stack: '',
        attempt: 0,
      },
    ]);
    expect(c!['errors']).toContain('Dependency b ended FAILED');
    expect(await memory.list(QUEUE, 'failed', 0, 10)).toHaveLength(3);
    expect((await memory.stats(QUEUE))['failed']).toBe(3);
    expect(await memory.claim([QUEUE], 10, WORKER, 0)).toEqual([]);
    expect(await memory.flows.load('f1')).toMatchObject({ state: 'FAILED', open: 0 });
    expect((await memory.flows.dependencies('c'))[0]).toMatchObject({ id: 'b', outcome: 'FAILED' });
  });

  it('satisfies an ignore edge and a remove edge: the dependent waits for the rest, then runs', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['slow', []],
        ['i', [['a', 'ignore'], 'slow']],
        ['r', [['a', 'remove'], 'slow']],
      ]),
    );
    expect(await settle(memory, (id) => (id === 'a' ? failure('a') : success()))).toEqual(['a', 'slow']);
    expect(await statuses(memory, ['i', 'r'])).toEqual([TaskStatus.READY, TaskStatus.READY]);
    // The store lists every edge; the caller leaves out a removed edge's failure.
    expect(
      (await memory.flows.dependencies('r')).map(({ id, onFailure, outcome }) => ({ id, onFailure, outcome })),
    ).toEqual([
      { id: 'a', onFailure: 'remove', outcome: 'FAILED' },
      { id: 'slow', onFailure: 'fail', outcome: 'SUCCESSFUL' },
    ]);
  });

  it('readies a continue edge’s dependent at once, its other dependency still open; that one later leaves it be', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', []],
        ['d', [['a', 'continue'], 'b']],
      ]),
    );
    const leased = await memory.claim([QUEUE], 10, WORKER, 0);
    const leaseOf = (id: string) => leased.find((run) => run.id === id)!;
    await memory.acknowledge([{ id: 'a', queue: QUEUE, token: leaseOf('a').token, outcome: failure('a') }]);
    expect(await statuses(memory, ['d'])).toEqual([TaskStatus.READY]);
    expect(await memory.flows.dependencies('d')).toEqual([
      { id: 'a', name: 'node-a', onFailure: 'continue', outcome: 'FAILED', value: expect.stringContaining('"a"') },
      { id: 'b', name: 'node-b', onFailure: 'fail' },
    ]);
    await memory.acknowledge([{ id: 'b', queue: QUEUE, token: leaseOf('b').token, outcome: failure('b') }]);
    expect(await statuses(memory, ['d'])).toEqual([TaskStatus.READY]);
  });

  it('applies a node’s edges once: a retry settles nothing, a requeued node runs again alone', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', [['a', 'ignore']]],
        ['c', ['b']],
      ]),
    );
    const retry: Outcome = {
      kind: 'retry',
      error: { errorClass: 'E', message: 'x', stack: '', attempt: 1 },
      delayMs: 0,
    };
    expect(await settle(memory, () => retry)).toEqual(['a']);
    expect(await statuses(memory, ['b'])).toEqual([TaskStatus.WAITING]);
    expect(await settle(memory, () => failure('a'))).toEqual(['a']);
    await memory.requeue('a', QUEUE);
    expect(await settle(memory, (id) => (id === 'a' ? success() : failure('b')))).toEqual(['a', 'b']);
    // b failed in its own attempt: c fails by its edge; a's second outcome is not recorded.
    expect(await statuses(memory, ['c'])).toEqual([TaskStatus.FAILED]);
    const stored = await memory.flows.load('f1');
    expect(stored!.nodes.map((node) => node.outcome)).toEqual(['FAILED', 'FAILED', 'FAILED']);
  });

  it('cancels a WAITING node: it counts as CANCELLED for its flow and its edges apply', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', ['a']],
        ['c', ['b']],
        ['d', [['b', 'ignore']]],
      ]),
    );
    expect(await memory.cancel('b', QUEUE)).toEqual({ cancelled: true, status: TaskStatus.WAITING });
    expect((await memory.counts([QUEUE]))[0]).toMatchObject({ waiting: 0, ready: 2, failed: 1, cancelled: 1 });
    expect(await statuses(memory, ['b', 'c', 'd'])).toEqual([
      TaskStatus.CANCELLED,
      TaskStatus.FAILED,
      TaskStatus.READY,
    ]);
    expect((await memory.load('c'))!['errors']).toContain('Dependency b ended CANCELLED');
    expect((await memory.flows.dependencies('d'))[0]).toMatchObject({ id: 'b', outcome: 'CANCELLED', value: '' });
  });

  it('dequeues a WAITING node: removed, CANCELLED for its flow', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', ['a']],
        ['c', [['b', 'continue']]],
      ]),
    );
    expect(await memory.dequeue('b', QUEUE)).toEqual({ removed: true, status: TaskStatus.WAITING });
    expect(await memory.load('b')).toBeNull();
    expect(await statuses(memory, ['c'])).toEqual([TaskStatus.READY]);
    expect((await memory.flows.load('f1'))!.nodes[1]).toMatchObject({ id: 'b', outcome: 'CANCELLED' });
  });

  it('purges a queue’s nodes as cancelled, dependencies first: a node its dependency’s purge failed goes as that failure', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', ['a']],
        ['c', ['b'], 'other'],
        ['d', [['a', 'ignore']], 'other'],
      ]),
    );
    expect(await memory.purge(QUEUE)).toBe(2);
    expect(await memory.loadMany(['a', 'b'])).toEqual([null, null]);
    expect(await statuses(memory, ['c', 'd'])).toEqual([TaskStatus.FAILED, TaskStatus.READY]);
    expect((await memory.load('c'))!['errors']).toContain('Dependency b ended FAILED');
    const stored = await memory.flows.load('f1');
    expect(stored!.nodes.map((node) => node.outcome)).toEqual(['CANCELLED', 'FAILED', 'FAILED', undefined]);
  });

  it('cancels a whole flow: open nodes end CANCELLED without applying their edges, a running one loses its lease', async () => {
    const memory = backend();
    await memory.flows.store(
      flowOf('f1', [
        ['a', []],
        ['b', []],
        ['c', ['a', 'b']],
        ['d', [['c', 'continue']]],
      ]),
    );
    const leased = await memory.claim([QUEUE], 10, WORKER, 0);
    const leaseOf = (id: string) => leased.find((run) => run.id === id)!;
    await memory.acknowledge([{ id: 'a', queue: QUEUE, token: leaseOf('a').token, outcome: success('2') }]);
    expect(await memory.flows.cancel('f1')).toEqual({ cancelled: 3, state: 'CANCELLED' });
    expect(await statuses(memory, ['a', 'b', 'c', 'd'])).toEqual([
      TaskStatus.SUCCESSFUL,
      TaskStatus.CANCELLED,
      TaskStatus.CANCELLED,
      TaskStatus.CANCELLED,
    ]);
    const late = { id: 'b', queue: QUEUE, token: leaseOf('b').token, outcome: success('4') };
    expect(await memory.acknowledge([late])).toEqual([false]);
    expect((await memory.counts([QUEUE]))[0]).toMatchObject({ running: 0, cancelled: 3 });
    expect(await memory.flows.load('f1')).toMatchObject({ state: 'CANCELLED', open: 0 });
    expect(await memory.flows.cancel('f1')).toEqual({ cancelled: 0, state: 'CANCELLED' });
    expect(await memory.flows.cancel('nope')).toEqual({ cancelled: 0, state: null });
  });

  it('loads no flow that was never stored; keeps an ended one for the longer result TTL, none at 0', async () => {
    const memory = backend({ successful: 1_000, failed: 5_000 });
    expect(await memory.flows.load('nope')).toBeNull();
    expect(await memory.flows.dependencies('nope')).toEqual([]);
    await memory.flows.store(flowOf('f1', [['a', []]]));
    expect(await memory.flows.dependencies('a')).toEqual([]);
    await settle(memory, () => success());
    memory.clock.advance(4_000);
    expect(await memory.flows.load('f1')).toMatchObject({ state: 'SUCCESSFUL' });
    memory.clock.advance(1_000);
    expect(await memory.flows.load('f1')).toBeNull();

    const unkept = backend(0);
    await unkept.flows.store(flowOf('f2', [['a', []]]));
    await settle(unkept, () => success());
    expect(await unkept.flows.load('f2')).toBeNull();
  });
});
