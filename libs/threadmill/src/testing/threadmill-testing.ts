import { ScheduleRunner } from '../schedule/schedule-runner.js';
import { writeQueueLimits } from '../backend/write-queue-limits.js';
import type { OnModuleInit, Type } from '@nestjs/common';
import type { TaskBackend } from '../backend/task-backend.js';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import type { MethodName, TaskArgs, TaskReturn } from '../queue/enqueue-options.interface.js';
import type { TaskResult } from '../records/task-result.js';
import { taskResultFromStored } from '../codec/task-result.factory.js';
import { TaskContract } from '../task/task-contract.js';
import type { TaskRegistry } from '../task/task.registry.js';
import { TaskExecutor } from '../worker/task-executor.js';
import { InMemoryTaskBackend } from './memory/in-memory.backend.js';
import { TestingRunner } from './testing-runner.js';
import { RunReporter } from '../task/run-reporter.js';
import type { ThreadmillTestingSettings } from './testing-options.js';

/** A recorded run with its arguments typed from its task. */
export type EnqueuedRun<A extends readonly unknown[] = readonly unknown[], R = unknown> = Omit<
  TaskResult<R>,
  'args'
> & { readonly args: A };

/**
 * What a test asks of the testing module: the runs enqueued, and running
 * them when it chooses (`mode: 'manual'`). Inject it, or
 * `moduleRef.get(ThreadmillTesting)`, once `ThreadmillTestingModule` is imported
 * (`getThreadmillTestingToken(name)` for a named testing backend).
 */
export class ThreadmillTesting implements OnModuleInit {
  private readonly runner: TestingRunner;
  private readonly memory: InMemoryTaskBackend;
  private readonly schedules: ScheduleRunner;

  /**
   * @param backend the testing module's own in-memory backend
   * @param served the backend the application's `TaskBackend` token serves: the same, unless a test overrode it
   */
  constructor(
    backend: InMemoryTaskBackend,
    served: TaskBackend,
    private readonly registry: TaskRegistry,
    readonly settings: ThreadmillTestingSettings,
    private readonly options: ThreadmillOptions,
  ) {
    if (served !== backend) {
      throw new ThreadmillConfigError(
        ['TaskBackend: ThreadmillTesting needs the InMemoryTaskBackend; do not override TaskBackend as well'],
        'ThreadmillTestingModule.forRoot()',
      );
    }
    this.memory = backend;
    this.runner = new TestingRunner(
      backend,
      new TaskExecutor(registry, undefined, new RunReporter(backend)),
      settings.maxRuns,
    );
    this.schedules = new ScheduleRunner(backend.schedules, {
      declarations: () => registry.schedules(),
      queues: options.queues,
      firedBy: 'testing',
    });
  }

  async onModuleInit(): Promise<void> {
    await this.memory.registerQueues(this.options.queues);
    await this.schedules.pass();
    await writeQueueLimits(this.memory, this.options);
    if (this.settings.mode === 'immediate') {
      this.memory.onPending(async (ids) => {
        await this.runner.drain();
        await this.runner.settled(ids);
      });
    }
  }

  /** The in-memory backend, for inspection beyond what this class offers. */
  get backend(): InMemoryTaskBackend {
    return this.memory;
  }

  /** Every run stored since the start (or the last {@link clear}), in enqueue order, as it stands now. */
  enqueued(): EnqueuedRun[];
  /** The runs of `task.method`, their arguments typed from its signature. */
  enqueued<T, M extends MethodName<T>>(task: Type<T>, method: M): EnqueuedRun<TaskArgs<T[M]>, TaskReturn<T[M]>>[];
  /** The runs of a contract's task (see `defineTask`), typed from it. */
  enqueued<A extends readonly unknown[], R>(contract: TaskContract<A, R>): EnqueuedRun<A, R>[];
  /** The runs of the task called `name`. */
  enqueued(name: string): EnqueuedRun[];
  enqueued(task?: string | Type | TaskContract, method?: string): EnqueuedRun[] {
    const name = this.taskName(task, method);
    const runs: EnqueuedRun[] = [];
    for (const run of this.memory.state.runs.values()) {
      const result = taskResultFromStored(run.id, run.stored());
      if (name === undefined || result.taskName === name) runs.push(result);
    }
    return runs;
  }

  /**
   * Runs one attempt of the next ready run (highest priority, then earliest
   * enqueued, across queues); resolves with its result afterwards, or null
   * when no run is ready. A retry is ready again at once (its backoff is skipped).
   */
  async runNext(): Promise<TaskResult | null> {
    const run = await this.runner.runNext();
    return run && taskResultFromStored(run.id, run.stored());
  }

  /**
   * Runs ready runs until none is left, runs enqueued by runs and retries
   * included; deferred runs whose time has come are made ready first.
   * Resolves with the result of each attempt's run, in order.
   * @throws RunawayRunsError past `maxRuns` attempts
   */
  async runAll(): Promise<TaskResult[]> {
    await this.memory.promote(this.memory.state.queueNames());
    const runs = await this.runner.drain();
    return runs.map((run) => taskResultFromStored(run.id, run.stored()));
  }

  /**
   * Moves the backend's clock forward by `ms`: deferred runs (a `delay`, a
   * `runAt`) come due as if that time had passed, and result TTLs run out.
   * In immediate mode the runs that came due run before it resolves.
   */
  async advanceTime(ms: number): Promise<void> {
    this.memory.clock.advance(ms);
    await this.runSchedules();
    await this.memory.trim(this.memory.state.queueNames());
    if (this.settings.mode === 'immediate') await this.runAll();
    else await this.memory.promote(this.memory.state.queueNames());
  }

  /**
   * Does what the workers' schedulers do, once, at the testing clock's time:
   * declares the code's schedules, plans new ones and fires every due slot
   * (`advanceTime` calls it). In immediate mode the fired runs run before it resolves.
   */
  async runSchedules(): Promise<void> {
    await this.schedules.declare();
    await this.schedules.pass();
  }

  /** Removes every run, as if none had been enqueued. */
  async clear(): Promise<void> {
    for (const queue of this.memory.state.queueNames()) await this.memory.purge(queue);
  }

  private taskName(task: string | Type | TaskContract | undefined, method: string | undefined): string | undefined {
    if (task === undefined || typeof task === 'string') return task;
    if (task instanceof TaskContract) return task.name;
    return this.registry.getByMethod(task, method!).name;
  }
}
