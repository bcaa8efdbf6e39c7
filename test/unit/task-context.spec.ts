import { TaskContext, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';

const result: TaskResult = {
  id: 'run-7',
  taskName: 'WelcomeService.send',
  queue: 'emails',
  priority: 3,
  status: TaskStatus.RUNNING,
  args: ['ada@example.com'],
  enqueuedAt: new Date(0),
  runAfter: null,
  startedAt: new Date(1),
  lastAttemptedAt: new Date(1),
  finishedAt: null,
  attempts: 2,
  workerIds: ['host:1:1', 'host:2:1'],
  errors: [],
  returnValue: undefined,
  progress: undefined,
  logs: [],
};

describe('TaskContext.of, for unit tests of task methods', () => {
  it('answers from the record it is given', () => {
    const context = TaskContext.of(result);
    expect(context).toBeInstanceOf(TaskContext);
    expect([context.id, context.attempt, context.queue, context.taskName]).toEqual([
      'run-7',
      2,
      'emails',
      'WelcomeService.send',
    ]);
    expect(context.result).toBe(result);
    expect(context.signal.aborted).toBe(false);
  });

  it('carries the signal it is given, to play a lost lease', () => {
    const lost = new AbortController();
    const context = TaskContext.of(result, lost.signal);
    lost.abort(new Error('lease lost'));
    expect(context.signal.aborted).toBe(true);
    expect(() => context.signal.throwIfAborted()).toThrow('lease lost');
  });
});
