import { Command, InvalidArgumentError, Option } from 'commander';
import { availableParallelism } from 'node:os';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import type { WorkerOptions } from '../worker/worker-options.interface.js';

/** What the worker command line asks for. */
export interface WorkerCommandLine extends Required<Omit<WorkerOptions, 'prefetch'>> {
  /** Undefined: adaptive. */
  prefetch: number | undefined;
  logFormat: 'text' | 'json';
}

function integer(flag: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
      throw new InvalidArgumentError(`${flag} must be an integer ${range}, got "${value}".`);
    }
    return n;
  };
}

function backendName(value: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw new InvalidArgumentError(
      `--backend must be the name of a ThreadmillModule (1-64 characters of letters, digits, "_", "." or "-"), got "${value}".`,
    );
  }
  return value;
}

function queueList(value: string): string[] {
  const queues = value
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  if (queues.length === 0)
    throw new InvalidArgumentError('--queues needs at least one queue name, e.g. --queues default,emails.');
  return queues;
}

/** The worker's command line, with an environment variable behind every flag. */
export function workerCommand(name = 'threadmill-worker'): Command {
  return new Command(name)
    .description('Run a Threadmill worker pool for the task modules of this application.')
    .addOption(
      new Option('-w, --workers <n>', 'worker processes (default: the number of CPUs)')
        .env('THREADMILL_WORKERS')
        .argParser(integer('--workers', 1)),
    )
    .addOption(
      new Option('-c, --concurrency <n>', 'attempts a process runs at once')
        .env('THREADMILL_CONCURRENCY')
        .argParser(integer('--concurrency', 1))
        .default(10),
    )
    .addOption(
      new Option('-b, --backend <name>', "the backend to consume: a ThreadmillModule's name")
        .env('THREADMILL_BACKEND')
        .argParser(backendName)
        .default(DEFAULT_BACKEND),
    )
    .addOption(
      new Option('-q, --queues <names>', 'comma-separated queues to consume (default: every queue of the module)')
        .env('THREADMILL_QUEUES')
        .argParser(queueList),
    )
    .addOption(
      new Option(
        '--prefetch <n>',
        'runs a process may hold beyond its free slots (default: adapts to the drain, at least 2)',
      )
        .env('THREADMILL_PREFETCH')
        .argParser(integer('--prefetch', 0)),
    )
    .addOption(
      new Option('--max-tasks <n>', 'recycle a process after this many runs (0: never)')
        .env('THREADMILL_MAX_TASKS')
        .argParser(integer('--max-tasks', 0))
        .default(0),
    )
    .addOption(
      new Option('--max-tasks-jitter <n>', "add up to this many runs at random to each process's --max-tasks")
        .env('THREADMILL_MAX_TASKS_JITTER')
        .argParser(integer('--max-tasks-jitter', 0))
        .default(0),
    )
    .addOption(
      // An optional value, so THREADMILL_EXIT_EMPTY=false means off (commander
      // would treat any value of a plain boolean flag's variable as on).
      new Option('--exit-empty [bool]', 'exit 0 once the queues are empty')
        .env('THREADMILL_EXIT_EMPTY')
        .preset('true')
        .argParser((value: string) => !/^(0|false|no|off)$/i.test(value))
        .default(false),
    )
    .addOption(
      new Option('--shutdown-timeout <seconds>', 'how long SIGTERM waits for running tasks before stopping hard')
        .env('THREADMILL_SHUTDOWN_TIMEOUT')
        .argParser(integer('--shutdown-timeout', 0))
        .default(30),
    )
    .addOption(
      new Option('--metrics-port <port>', 'serve Prometheus metrics of the pool on this port (0: none)')
        .env('THREADMILL_METRICS_PORT')
        .argParser(integer('--metrics-port', 0, 65_535))
        .default(0),
    )
    .addOption(
      new Option('--metrics-host <host>', 'interface the metrics port listens on')
        .env('THREADMILL_METRICS_HOST')
        .default('0.0.0.0'),
    )
    .addOption(
      new Option(
        '--boot-gc [bool]',
        'collect boot garbage once before the first claim (false: leave the collector alone)',
      )
        .env('THREADMILL_BOOT_GC')
        .preset('true')
        .argParser((value: string) => !/^(0|false|no|off)$/i.test(value))
        .default(true),
    )
    .addOption(
      new Option('--log-format <format>', 'log as human-readable text or JSON lines')
        .env('THREADMILL_LOG_FORMAT')
        .choices(['text', 'json'])
        .default('text'),
    )
    .helpOption('-h, --help', 'show this help')
    .allowExcessArguments(false)
    .showHelpAfterError('(run with --help for usage)');
}

/** The server options a command line can set, by the name of their flag's value. */
const SERVER_FLAGS = {
  queues: 'queues',
  concurrency: 'concurrency',
  prefetch: 'prefetch',
  exitEmpty: 'exitEmpty',
  shutdownTimeout: 'shutdownTimeoutMs',
  bootGc: 'bootGc',
} as const;

/** The server options a command line sets, by flag or environment variable. */
export type GivenServerOptions = Partial<Pick<WorkerCommandLine, (typeof SERVER_FLAGS)[keyof typeof SERVER_FLAGS]>>;

/**
 * Parses the worker's command line. Bad flags throw a commander error whose
 * message names the flag (`runWorker` prints it and exits 2).
 */
export function parseWorkerCommandLine(argv: readonly string[]): WorkerCommandLine {
  return readWorkerCommandLine(argv).commandLine;
}

/**
 * Parses the worker's command line, and tells which server options it sets
 * (a flag or its environment variable, not a default): those override the
 * options of `ThreadmillWorkerModule`, which override the defaults.
 */
export function readWorkerCommandLine(argv: readonly string[]): {
  commandLine: WorkerCommandLine;
  given: GivenServerOptions;
} {
  const command = workerCommand().exitOverride();
  command.parse(argv as string[], { from: 'user' });
  const o = command.opts<{
    workers?: number;
    backend: string;
    maxTasksJitter: number;
    concurrency: number;
    queues?: string[];
    prefetch: number | undefined;
    maxTasks: number;
    exitEmpty: boolean;
    shutdownTimeout: number;
    metricsPort: number;
    metricsHost: string;
    bootGc: boolean;
    logFormat: 'text' | 'json';
  }>();
  const commandLine: WorkerCommandLine = {
    workers: o.workers ?? availableParallelism(),
    backend: o.backend,
    maxTasksJitter: o.maxTasksJitter,
    concurrency: o.concurrency,
    queues: o.queues ?? [],
    prefetch: o.prefetch,
    maxTasks: o.maxTasks,
    exitEmpty: o.exitEmpty,
    shutdownTimeoutMs: o.shutdownTimeout * 1000,
    metricsPort: o.metricsPort,
    metricsHost: o.metricsHost,
    bootGc: o.bootGc,
    logFormat: o.logFormat,
  };
  const given: Record<string, unknown> = {};
  for (const [flag, option] of Object.entries(SERVER_FLAGS)) {
    const source = command.getOptionValueSource(flag);
    if (source === 'cli' || source === 'env') given[option] = commandLine[option];
  }
  return { commandLine, given: given as GivenServerOptions };
}
