import { describe, expect, it } from 'vitest';
import type { WorkerInfo } from '@threadmill/nestjs';
import { workerLines } from '../../libs/threadmill-cli/src/ui/workers-view.js';

const NOW = Date.UTC(2026, 11, 7, 9, 0, 0);

function worker(clockOffsetMs?: number): WorkerInfo {
  return {
    id: 'host-a:4242:0',
    queues: ['default'],
    concurrency: 4,
    startedAt: NOW - 60_000,
    done: 12,
    held: 1,
    seenAt: NOW - 500,
    leases: [],
    ...(clockOffsetMs === undefined ? {} : { clockOffsetMs }),
  };
}

const clockLine = (lines: ReturnType<typeof workerLines>) => lines.find((line) => line.text.includes('clock'));

describe("the terminal inspector's workers view", () => {
  it("shows a worker's clock offset to Redis, dimmed while within the warning threshold", () => {
    const line = clockLine(workerLines([worker(-150)], 80, NOW, true));
    expect(line).toMatchObject({ text: '  clock -150 ms vs Redis', dim: true });
  });

  it('flags an offset past 500 ms in yellow and says what to do', () => {
    const line = clockLine(workerLines([worker(5_012)], 80, NOW, true));
    expect(line?.text).toBe("  clock +5012 ms vs Redis: synchronise this host's clock (NTP)");
    expect(line?.color).toBe('yellow');
  });

  it('shows no clock line for a worker of a version that does not report it', () => {
    expect(clockLine(workerLines([worker()], 80, NOW, true))).toBeUndefined();
  });
});
