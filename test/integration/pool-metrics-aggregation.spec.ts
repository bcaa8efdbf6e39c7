import { TaskInspector } from '@threadmill/nestjs';
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { RunEvents } from '../../libs/threadmill/src/events/run-events.js';
import {
  isMetricsRequest,
  type MetricsReply,
  type MetricsSnapshot,
} from '../../libs/threadmill/src/metrics/member-metrics.js';
import { PoolMetrics } from '../../libs/threadmill/src/metrics/pool-metrics.js';
import { RunMetrics } from '../../libs/threadmill/src/metrics/run-metrics.js';
import { Harness } from '../support/harness.js';
import { parseMetrics, valueOf } from '../support/prometheus.js';

const RUNS_PER_MEMBER = 10;
const work = { queue: 'default', task: 'MathService.add' };

/** The counters of a pool member that settled `RUNS_PER_MEMBER` runs, as it sends them over IPC. */
async function memberSnapshot(): Promise<MetricsSnapshot> {
  const registry = new Registry();
  const metrics = new RunMetrics(registry);
  for (let i = 0; i < RUNS_PER_MEMBER; i++) {
    metrics.settled({ ...work, id: `run-${i}`, attempt: 1, outcome: 'successful', durationMs: 2, source: 'worker' });
  }
  return registry.getMetricsAsJSON();
}

/**
 * The supervisor's side of a pool member's IPC channel: it answers metric
 * requests after `answerMs`, and on exit sends its final counts, then
 * disconnects, as a real member's channel does.
 */
class MemberChannel extends EventEmitter {
  connected = true;

  constructor(
    private readonly snapshot: MetricsSnapshot,
    private readonly answerMs: number,
  ) {
    super();
  }

  send(message: unknown, callback?: (error: Error | null) => void): boolean {
    callback?.(null);
    if (isMetricsRequest(message)) {
      setTimeout(() => this.connected && this.reply(message.id), this.answerMs);
    }
    return true;
  }

  exit(): void {
    this.reply(0);
    this.connected = false;
    this.emit('disconnect');
  }

  private reply(id: number): void {
    const reply: MetricsReply = { type: 'threadmill:metrics', id, metrics: this.snapshot };
    this.emit('message', reply);
  }
}

describe("the worker pool's metrics aggregation (PoolMetrics)", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('counts every member exactly once while members exit during scrapes, and after many recyclings', async () => {
    const app = await Harness.start();
    cleanup.push(() => app.close());
    // The real inspector on the real backend, with a slow overview: a scrape
    // reads the queues from Redis while members exit, as on a loaded Redis.
    const inspector = app.module.get(TaskInspector);
    const slowInspector = Object.create(inspector) as TaskInspector;
    slowInspector.overview = async (...args) => {
      await delay(40);
      return inspector.overview(...args);
    };
    const pool = new PoolMetrics(new RunEvents(), slowInspector);
    cleanup.push(() => pool.close());
    const snapshot = await memberSnapshot();

    let attached = 0;
    const live: MemberChannel[] = [];
    const seen: number[] = [];
    const expected: number[] = [];
    const recycle = async (answerMs: number, exitAfterMs: number) => {
      // A replacement joins, and the oldest member exits while the scrape is in flight.
      const member = new MemberChannel(snapshot, answerMs);
      pool.attach(member as unknown as ChildProcess);
      live.push(member);
      attached += 1;
      const scrape = pool.scrape();
      await delay(exitAfterMs);
      if (live.length > 2) live.shift()!.exit();
      seen.push(valueOf(parseMetrics(await scrape), 'threadmill_runs_succeeded_total', work)!);
      // Every member attached so far, live or retired, exactly once.
      expected.push(attached * RUNS_PER_MEMBER);
    };
    // Exits after the members answered, while the queues are read (a fresh read
    // each time: scrapes within a second share one).
    for (let round = 0; round < 4; round++) {
      await recycle(0, 10);
      await delay(1_050);
    }
    // Many recyclings in a row, exiting at every point of a scrape.
    for (let round = 0; round < 30; round++) await recycle(round % 3, round % 4);
    expect(seen).toEqual(expected);

    for (const member of live.splice(0)) member.exit();
    await delay(50); // the background compaction of the retired members' counts
    const samples = parseMetrics(await pool.scrape());
    expect(valueOf(samples, 'threadmill_runs_succeeded_total', work)).toBe(attached * RUNS_PER_MEMBER);
    expect(valueOf(samples, 'threadmill_run_duration_seconds_count', { ...work, outcome: 'successful' })).toBe(
      attached * RUNS_PER_MEMBER,
    );
  });
});
