import type { Redis } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** One reading of the soak's gauges, `at` ms after sampling began. */
export interface SoakSample {
  readonly at: number;
  /** The supervisor's resident set (bytes). */
  readonly supervisorRss: number;
  /** Each pool member's resident set (bytes), by pid. */
  readonly memberRss: ReadonlyMap<number, number>;
  /** Redis `used_memory` (bytes). */
  readonly redisMemory: number;
  /** The pool's event-loop delay from its metrics (seconds, averaged over its processes); null when the scrape failed. */
  readonly loopMean: number | null;
  readonly loopP99: number | null;
}

/** A process's resident set (VmRSS, bytes), or null when it is gone. */
export function rssOf(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1_024 : null;
  } catch {
    return null;
  }
}

/** The pids of a process's children (a pool's members: the supervisor forks them). */
export function childrenOf(pid: number): number[] {
  try {
    const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
    return out.split('\n').filter(Boolean).map(Number);
  } catch {
    // ps exits 1 when the process has no children.
    return [];
  }
}

/** The value of an unlabelled gauge in a Prometheus text page, or null. */
export function gauge(page: string, name: string): number | null {
  const match = new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(page);
  return match ? Number(match[1]) : null;
}

/**
 * Reads, every `everyMs`, the RSS of a pool's supervisor and of each of its
 * members (from /proc, members found by their parent pid), Redis's
 * `used_memory` and the event-loop delay the pool's `--metrics-port` serves.
 */
export class SoakSampler {
  readonly samples: SoakSample[] = [];
  /** Each member's peak RSS and when it was first and last seen (ms after the start), by pid. */
  readonly members = new Map<number, { first: number; last: number; peak: number }>();
  private readonly began = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  /** Scrapes that failed (the pool's metrics port not answering). */
  scrapeFailures = 0;

  constructor(
    private readonly supervisorPid: number,
    private readonly redis: Redis,
    private readonly metricsUrl: string,
  ) {}

  start(everyMs: number): void {
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.sample());
    }, everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Takes one sample now. */
  async sample(): Promise<void> {
    const at = Date.now() - this.began;
    const memberRss = new Map<number, number>();
    for (const pid of childrenOf(this.supervisorPid)) {
      const rss = rssOf(pid);
      if (rss === null) continue;
      memberRss.set(pid, rss);
      const seen = this.members.get(pid);
      if (seen) Object.assign(seen, { last: at, peak: Math.max(seen.peak, rss) });
      else this.members.set(pid, { first: at, last: at, peak: rss });
    }
    const info = await this.redis.info('memory');
    const redisMemory = Number(/^used_memory:(\d+)/m.exec(info)![1]);
    let page = '';
    try {
      const response = await fetch(this.metricsUrl, { signal: AbortSignal.timeout(5_000) });
      page = await response.text();
    } catch {
      this.scrapeFailures++;
    }
    this.samples.push({
      at,
      supervisorRss: rssOf(this.supervisorPid) ?? 0,
      memberRss,
      redisMemory,
      loopMean: gauge(page, 'nodejs_eventloop_lag_mean_seconds'),
      loopP99: gauge(page, 'nodejs_eventloop_lag_p99_seconds'),
    });
  }
}

/** How a gauge moved after warm-up: the mean of the middle third of samples against the last third. */
export interface Growth {
  readonly middle: number;
  readonly last: number;
  /** (last - middle) / middle. */
  readonly change: number;
  /** `change` extrapolated linearly to half an hour (the thirds' centres are `gapMs` apart). */
  readonly perHalfHour: number;
  /** The middle third's coefficient of variation: the noise a change is judged against. */
  readonly noise: number;
  readonly gapMs: number;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The growth of `value` over `points` (`at` in ms), comparing the last third with the middle third. */
export function growth(points: readonly { at: number; value: number }[]): Growth {
  const third = Math.floor(points.length / 3);
  const middle = points.slice(third, points.length - third);
  const last = points.slice(points.length - third);
  const m = mean(middle.map((p) => p.value));
  const l = mean(last.map((p) => p.value));
  const gapMs = mean(last.map((p) => p.at)) - mean(middle.map((p) => p.at));
  const sd = Math.sqrt(mean(middle.map((p) => (p.value - m) ** 2)));
  const change = (l - m) / m;
  return { middle: m, last: l, change, perHalfHour: (change * 1_800_000) / gapMs, noise: sd / m, gapMs };
}
