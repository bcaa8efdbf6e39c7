import type { LeasedRun } from '../backend/task-backend.js';
import { decodeRunPayload } from '../codec/run-payload.js';
import { RunawayRunsError } from '../errors/runaway-runs.error.js';
import type { Attempt, TaskExecutor } from '../worker/task-executor.js';
import type { InMemoryTaskBackend } from './memory/in-memory.backend.js';
import type { MemoryRun } from './memory/memory-run.js';
import { overriddenTtl } from '../records/result-ttl.js';

/** The worker id the testing module's attempts are recorded under. */
export const TESTING_WORKER_ID = 'testing:0:0';

/**
 * Runs the in-memory backend's ready runs in this process, one attempt at a
 * time, through the real executor (the task method through DI, argument
 * validation, retry policies) and the real acknowledgement, so a run ends
 * with the same fields as under a worker. A retry's backoff is skipped: the
 * run is ready again at once (its error history and attempts are as in
 * production).
 */
export class TestingRunner {
  private readonly attempts = new Map<string, Promise<void>>();
  /** Attempts since the outermost drain began, against the bound. */
  private budget = 0;
  private draining = 0;

  constructor(
    private readonly backend: InMemoryTaskBackend,
    private readonly executor: TaskExecutor,
    private readonly maxRuns: number,
  ) {}

  /**
   * Runs one attempt of the next ready run: the highest priority first, then
   * the earliest enqueued, across every queue. Returns its record (kept by
   * reference, so it holds the outcome even when `resultTtlMs: 0` removed
   * it from the store), or null when nothing is ready.
   */
  async runNext(): Promise<MemoryRun | null> {
    const queue = this.nextQueue();
    if (queue === undefined) return null;
    const [run] = await this.backend.claim([queue], 1, TESTING_WORKER_ID, 0);
    if (!run) return null;
    const record = this.backend.state.runs.get(run.id)!;
    const attempt = this.attempt(run);
    this.attempts.set(run.id, attempt);
    try {
      await attempt;
    } finally {
      if (this.attempts.get(run.id) === attempt) this.attempts.delete(run.id);
    }
    return record;
  }

  /**
   * Runs ready runs until none is left, runs they enqueue included; throws
   * {@link RunawayRunsError} past the bound. Returns the runs, in order.
   */
  async drain(): Promise<MemoryRun[]> {
    const ran: MemoryRun[] = [];
    if (this.draining++ === 0) this.budget = 0;
    try {
      for (;;) {
        if (this.budget >= this.maxRuns) throw new RunawayRunsError(this.maxRuns, this.lastTask(ran));
        const run = await this.runNext();
        if (run === null) return ran;
        this.budget++;
        ran.push(run);
      }
    } finally {
      this.draining--;
    }
  }

  /** Resolves once no attempt of these runs is under way (another drain may be running them). */
  async settled(ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map((id) => this.attempts.get(id)));
  }

  private lastTask(ran: readonly MemoryRun[]): string | undefined {
    const payload = ran[ran.length - 1]?.fields['payload'];
    if (!payload) return undefined;
    try {
      return decodeRunPayload(payload).task;
    } catch {
      return undefined;
    }
  }

  /** The queue whose first ready run comes first overall (scores order priority, then enqueue order). */
  private nextQueue(): string | undefined {
    let best: { queue: string; score: number } | undefined;
    for (const name of this.backend.state.queueNames()) {
      // A paused queue's runs wait (a claim takes none): the next queue's run.
      if (this.backend.state.paused.has(name)) continue;
      for (const score of this.backend.state.queue(name).ready.values()) {
        if (!best || score < best.score) best = { queue: name, score };
      }
    }
    return best?.queue;
  }

  private async attempt(run: LeasedRun): Promise<void> {
    const controller = new AbortController();
    const lease = { signal: controller.signal, abort: (reason: Error) => controller.abort(reason) };
    // A timed-out attempt settles with its timeout's failure; what its task returns later is discarded.
    const attempt = await new Promise<Attempt>((resolve) => {
      const settle = (_lease: unknown, later: Attempt) => resolve(later);
      const ended = this.executor.execute(run, lease, { ended: settle, timedOut: settle });
      if (ended) resolve(ended);
    });
    const { outcome } = attempt;
    const resultTtlMs = overriddenTtl(attempt.resultTtlMs, outcome.kind);
    await this.backend.acknowledge([{ id: run.id, queue: run.queue, token: run.token, outcome, resultTtlMs }]);
    if (outcome.kind === 'retry') this.backend.promoteRun(run.id);
  }
}
