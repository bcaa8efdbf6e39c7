import { Injectable, Module } from '@nestjs/common';
import { Task, TaskStatus } from '@threadmill/nestjs';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvents } from '../../libs/threadmill/src/events/run-events.js';
import { RunMetrics } from '../../libs/threadmill/src/metrics/run-metrics.js';
import { getRunEventsToken } from '../../libs/threadmill/src/module/backend-tokens.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness, type HarnessOptions } from '../support/harness.js';
import { parseMetrics, valueOf } from '../support/prometheus.js';
import { waitUntil } from '../support/wait.js';

/** Opened by the test: the attempts of `GatedService.wait` end only then, whatever happened to their runs. */
const gate = { started: 0, blocked: false, open: () => {}, opened: Promise.resolve() };
function closeGate(): void {
  gate.started = 0;
  gate.blocked = false;
  gate.opened = new Promise((resolve) => (gate.open = resolve));
}

@Injectable()
class GatedService {
  /** Waits for the gate, deaf to its AbortSignal: its result arrives after whatever the test did meanwhile. */
  @Task()
  async wait(): Promise<string> {
    gate.started++;
    await gate.opened;
    return 'done';
  }

  /**
   * Holds the event loop for `ms` the first time: no renewal runs meanwhile,
   * so a lease shorter than that expires. The run, recovered by the reaper,
   * then succeeds.
   */
  @Task()
  block(ms: number): string {
    if (gate.blocked) return 'not blocked';
    gate.blocked = true;
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // Busy on purpose.
    }
    return 'blocked';
  }
}

@Module({ providers: [GatedService] })
class GatedTasksModule {}

const SUMMARY = /^Discarded (\d+) stale acknowledgement\(s\) in the last [\d.]+ s: /;

describe('stale acknowledgements, counted and summarised', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start(options: HarnessOptions['options'] = {}) {
    closeGate();
    const logger = new CapturedLogger();
    const app = await Harness.start({
      options,
      imports: [GatedTasksModule],
      worker: { concurrency: 3, logSummaryIntervalMs: 200 },
      logger,
    });
    cleanup.push(() => app.close());
    const registry = new Registry();
    app.module.get<RunEvents>(getRunEventsToken()).subscribe(new RunMetrics(registry));
    const stale = async (reason: string) =>
      valueOf(parseMetrics(await registry.metrics()), 'threadmill_stale_acks_total', { reason });
    const summaries = () => logger.lines.filter((line) => SUMMARY.test(line.message));
    const summarised = () => summaries().reduce((sum, line) => sum + Number(SUMMARY.exec(line.message)![1]), 0);
    return { app, logger, stale, summaries, summarised };
  }

  it('the late results of runs cancelled while they ran: summarised at LOG, counted as revoked', async () => {
    const { app, logger, stale, summaries, summarised } = await start();
    const runs = await app.queue.enqueueMany([1, 2, 3].map(() => ({ task: 'GatedService.wait', args: [] })));
    await waitUntil('every attempt started', () => gate.started === 3);
    for (const run of runs) expect(await app.queue.cancel(run.id)).toMatchObject({ cancelled: true });
    gate.open();

    await waitUntil('the discards are summarised', () => summarised() === 3);
    for (const line of summaries()) {
      expect(line.level).toBe('log');
      expect(line.message).toMatch(/: \d of runs cancelled or purged while they ran \(threadmill_stale_acks_total/);
    }
    expect(await stale('revoked')).toBe(3);
    expect(await stale('expired')).toBe(0);
    expect(logger.warnings().filter((line) => /stale/.test(line))).toEqual([]);
    for (const run of runs) expect((await app.queue.getResult(run.id)).status).toBe(TaskStatus.CANCELLED);
  });

  it('the result of an attempt that outlived its lease: a WARN summary, counted as expired', async () => {
    const { app, stale, summaries, summarised } = await start({ leaseTtlMs: 300 });
    const run = await app.queue.enqueue('GatedService.block', [1_000]);

    expect((await app.waitFor(run.id)).returnValue).toBe('not blocked');
    await waitUntil('the discard is summarised', () => summarised() === 1);
    expect(summaries()).toHaveLength(1);
    expect(summaries()[0]!.level).toBe('warn');
    expect(summaries()[0]!.message).toMatch(/: 1 after their lease expired \(threadmill_stale_acks_total by reason\)/);
    expect(await stale('expired')).toBe(1);
    expect(await stale('revoked')).toBe(0);
  });
});
