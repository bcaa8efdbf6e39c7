import { UnconfirmedEnqueueError } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';
import { redirectionOf } from '../../libs/threadmill/src/backend/redis/confirm/redirection.js';
import {
  enqueueConfirmationProblem,
  resolveEnqueueConfirmation,
} from '../../libs/threadmill/src/records/enqueue-confirmation.js';

/** An error as ioredis reports a Redis error reply. */
function replyError(message: string): Error {
  const error = new Error(message);
  error.name = 'ReplyError';
  return error;
}

describe('confirmEnqueues', () => {
  it('takes false or { replicas, timeoutMs? } and defaults the timeout to 1000 ms', () => {
    for (const value of [false, { replicas: 1 }, { replicas: 2, timeoutMs: 60_000 }]) {
      expect(enqueueConfirmationProblem(value)).toBeUndefined();
    }
    expect(resolveEnqueueConfirmation(false)).toBeUndefined();
    expect(resolveEnqueueConfirmation({ replicas: 2 })).toEqual({ replicas: 2, timeoutMs: 1_000 });
  });

  it('names what is wrong with a bad value', () => {
    expect(enqueueConfirmationProblem(null)).toMatch(/must be false \(the default\) or \{ replicas, timeoutMs\? \}/);
    expect(enqueueConfirmationProblem({ replicas: 1.5 })).toBe(
      'confirmEnqueues.replicas must be a whole number from 1 to 100, got 1.5',
    );
    expect(enqueueConfirmationProblem({ timeoutMs: 10 })).toMatch(/replicas must be a whole number .*got undefined/);
    expect(enqueueConfirmationProblem({ replicas: 1, timeoutMs: 0 })).toMatch(/WAIT 0 would wait forever/);
    expect(enqueueConfirmationProblem({ replicas: 1, wait: 5 })).toMatch(/unknown field "wait"/);
  });
});

describe('redirectionOf', () => {
  it('reads the refusals Redis answers before it runs a command, and nothing else', () => {
    expect(redirectionOf(replyError('MOVED 3999 127.0.0.1:6381'))).toEqual({ kind: 'moved', to: '127.0.0.1:6381' });
    expect(redirectionOf(replyError('ASK 3999 127.0.0.1:6381'))).toEqual({ kind: 'ask', to: '127.0.0.1:6381' });
    expect(redirectionOf(replyError('TRYAGAIN Multiple keys request during rehashing of slot'))).toEqual({
      kind: 'retry',
    });
    expect(redirectionOf(replyError('CLUSTERDOWN The cluster is down'))).toEqual({ kind: 'retry' });
    // A reply error of the script, or a dropped connection: the script may have run.
    expect(redirectionOf(replyError('ERR Error running script'))).toBeUndefined();
    expect(redirectionOf(new Error('Connection is closed.'))).toBeUndefined();
  });
});

describe('UnconfirmedEnqueueError', () => {
  const settings = { acknowledged: 0, replicas: 1, timeoutMs: 500 };

  it('gives each request of a coalesced store its own share, and none to a request whose runs were confirmed', () => {
    const error = new UnconfirmedEnqueueError({
      runIds: ['a', 'b', 'c', 'd'],
      unconfirmedIds: ['a', 'd'],
      ...settings,
    });
    expect(error.share(0, 2)).toMatchObject({ runIds: ['a', 'b'], unconfirmedIds: ['a'], replicas: 1 });
    expect(error.share(1, 3)).toBeUndefined();
    expect(error.share(3, 4)!.message).toMatch(/^1 run\(s\) \(d\) are stored on the Redis master, but 0 of the 1/);
  });

  it('combines the unconfirmed stores of one call', () => {
    const parts = [
      new UnconfirmedEnqueueError({ runIds: ['a'], unconfirmedIds: ['a'], ...settings, acknowledged: 1 }),
      new UnconfirmedEnqueueError({ runIds: ['c'], unconfirmedIds: ['c'], ...settings }, new Error('closed')),
    ];
    const combined = UnconfirmedEnqueueError.combine(['a', 'b', 'c'], parts);
    expect(combined).toMatchObject({ runIds: ['a', 'b', 'c'], unconfirmedIds: ['a', 'c'], acknowledged: 0 });
    expect(combined.message).toMatch(/the confirmation failed: closed/);
  });
});
