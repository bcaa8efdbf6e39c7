import { describe, expect, it } from 'vitest';
import type { WorkSignal } from '../../libs/threadmill/src/backend/task-backend.js';
import { PartitionSignals } from '../../libs/threadmill/src/backend/partitioned/partition-signals.js';

/** A partition's wake-up signal that fires when told, as a blocked BZPOPMIN returns when a marker is added. */
class ManualSignal implements WorkSignal {
  closed = false;
  private pending: ((woken: boolean) => void) | undefined;

  constructor(readonly partition: number) {}

  wait(): Promise<boolean> {
    return new Promise((resolve) => (this.pending = resolve));
  }

  fire(): void {
    this.pending?.(true);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pending?.(false);
  }
}

describe('partition signals', () => {
  it('stops waiting on partitions that left the span (their connections closed), and waits on them again if it grows back', async () => {
    let span = 4;
    const opened: ManualSignal[] = [];
    const signals = new PartitionSignals(
      (p) => {
        const signal = new ManualSignal(p);
        opened.push(signal);
        return signal;
      },
      () => span,
      () => false,
    );
    const first = signals.wait(1_000);
    opened[3]!.fire();
    expect(await first).toEqual(new Set([3]));
    expect(opened.map((signal) => signal.partition)).toEqual([0, 1, 2, 3]);

    span = 2;
    const second = signals.wait(1_000);
    expect(opened.map((signal) => signal.closed)).toEqual([false, false, true, true]);
    opened[1]!.fire();
    expect(await second).toEqual(new Set([1]));
    // A dropped partition's signal woken late tells nothing.
    opened[2]!.fire();
    expect(await signals.wait(20)).toEqual(new Set());

    span = 4;
    const third = signals.wait(1_000);
    // Partition 1 waits on its signal again; 2 and 3 open new ones.
    expect(opened.map((signal) => signal.partition)).toEqual([0, 1, 2, 3, 2, 3]);
    opened[4]!.fire();
    expect(await third).toEqual(new Set([2]));
    await signals.close();
    expect(opened.filter((signal) => !signal.closed)).toEqual([]);
  });
});
