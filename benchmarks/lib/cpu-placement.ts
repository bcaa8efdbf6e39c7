import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Which CPUs the benchmark's processes run on. Redis gets a CPU of its own,
 * as on a host of its own in production; the benchmark process (every
 * system's producer) and the worker processes it forks (a fork inherits its
 * binding) share the others.
 *
 * Left to itself, Linux's scheduler tends to wake a process on the CPU of the
 * process that woke it, so a producer and the Redis it keeps busy can end up
 * sharing one CPU, taking turns while the other idles. It happens in some
 * runs and not others, and weighs most on a phase that keeps Redis busier
 * than its producer: the bulk phase's ratio to bee-queue scattered far more
 * unpinned than pinned, the medians alike (docs/optimisations.md, the
 * method's change after step 44).
 */
export class CpuPlacement {
  private constructor(
    /** The CPU list of Redis, as `taskset -c` reads it. */
    readonly redis: string,
    /** The CPU list of the benchmark process. */
    readonly bench: string,
  ) {}

  /**
   * The placement on this machine: Redis on the last CPU this process may
   * use, the rest for everything else; `undefined` with fewer than 2 such
   * CPUs or without `taskset`.
   */
  static plan(): CpuPlacement | undefined {
    const cpus = allowedCpus();
    if (cpus.length < 2 || !hasTaskset()) return undefined;
    return new CpuPlacement(String(cpus.at(-1)), cpus.slice(0, -1).join(','));
  }

  /** Binds every thread of `pid` to `cpus`. */
  static bind(pid: number, cpus: string): void {
    execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cpus, String(pid)], { stdio: 'ignore' });
  }

  describe(): string {
    return `Redis on CPU ${this.redis}, the benchmark process and its workers on CPU ${this.bench}`;
  }
}

/**
 * The CPUs this process may run on (a container may allow other CPUs than
 * 0..n-1), from `Cpus_allowed_list` in /proc/self/status, e.g. `0-3,8`;
 * none where there is no such file.
 */
function allowedCpus(): number[] {
  let status: string;
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return [];
  }
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1] ?? '';
  return list
    .split(',')
    .filter(Boolean)
    .flatMap((range) => {
      const [first, last = first] = range.split('-').map(Number);
      return Array.from({ length: last! - first! + 1 }, (_, i) => first! + i);
    });
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
