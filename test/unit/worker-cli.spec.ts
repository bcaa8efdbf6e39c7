import { CommanderError } from 'commander';
import { availableParallelism } from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseWorkerCommandLine } from '../../libs/threadmill/src/pool/worker-cli.js';

/** Runs `fn` with commander's error output silenced. */
function quietly<T>(fn: () => T): T {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  return fn();
}

describe('the worker command line', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('has defaults', () => {
    expect(parseWorkerCommandLine([])).toEqual({
      workers: availableParallelism(),
      backend: 'default',
      maxTasksJitter: 0,
      concurrency: 10,
      queues: [],
      prefetch: undefined, // adaptive
      maxTasks: 0,
      exitEmpty: false,
      shutdownTimeoutMs: 30_000,
      metricsPort: 0,
      metricsHost: '0.0.0.0',
      bootGc: true,
      logFormat: 'text',
    });
  });

  it('parses every flag', () => {
    expect(
      parseWorkerCommandLine([
        '--workers',
        '3',
        '--backend',
        'critical',
        '--max-tasks-jitter',
        '50',
        '--concurrency',
        '50',
        '--queues',
        'a, b',
        '--prefetch',
        '8',
        '--max-tasks',
        '1000',
        '--exit-empty',
        '--shutdown-timeout',
        '5',
        '--metrics-port',
        '9464',
        '--metrics-host',
        '127.0.0.1',
        '--log-format',
        'json',
        '--boot-gc',
        'false',
      ]),
    ).toEqual({
      workers: 3,
      backend: 'critical',
      maxTasksJitter: 50,
      concurrency: 50,
      queues: ['a', 'b'],
      prefetch: 8,
      maxTasks: 1000,
      exitEmpty: true,
      shutdownTimeoutMs: 5_000,
      metricsPort: 9464,
      metricsHost: '127.0.0.1',
      bootGc: false,
      logFormat: 'json',
    });
  });

  it('reads every flag from the environment too', () => {
    vi.stubEnv('THREADMILL_WORKERS', '4');
    vi.stubEnv('THREADMILL_CONCURRENCY', '7');
    vi.stubEnv('THREADMILL_QUEUES', 'emails');
    vi.stubEnv('THREADMILL_EXIT_EMPTY', 'true');
    vi.stubEnv('THREADMILL_LOG_FORMAT', 'json');
    vi.stubEnv('THREADMILL_METRICS_PORT', '9100');
    vi.stubEnv('THREADMILL_BACKEND', 'critical');
    expect(parseWorkerCommandLine([])).toMatchObject({
      workers: 4,
      backend: 'critical',
      concurrency: 7,
      queues: ['emails'],
      exitEmpty: true,
      metricsPort: 9100,
      logFormat: 'json',
    });
  });

  it('treats THREADMILL_EXIT_EMPTY=false as off', () => {
    vi.stubEnv('THREADMILL_EXIT_EMPTY', 'false');
    expect(parseWorkerCommandLine([]).exitEmpty).toBe(false);
  });

  it('turns the boot collection off with THREADMILL_BOOT_GC=off, and on with a bare --boot-gc', () => {
    vi.stubEnv('THREADMILL_BOOT_GC', 'off');
    expect(parseWorkerCommandLine([]).bootGc).toBe(false);
    expect(parseWorkerCommandLine(['--boot-gc']).bootGc).toBe(true);
  });

  it.each([
    [['--concurrency', '0'], /--concurrency must be an integer >= 1, got "0"/],
    [['--concurrency', 'many'], /--concurrency must be an integer >= 1, got "many"/],
    [['--log-format', 'xml'], /--log-format.*xml.*Allowed choices are text, json/],
    [['--bogus'], /unknown option '--bogus'/],
    [['--workers', '0'], /--workers must be an integer >= 1, got "0"/],
    [['--backend', 'two words'], /--backend must be the name of a ThreadmillModule .*got "two words"/],
    [['--metrics-port', '70000'], /--metrics-port must be an integer from 0 to 65535, got "70000"/],
  ])('refuses %o with a message naming the flag', (argv, message) => {
    const error = quietly(() => {
      try {
        parseWorkerCommandLine(argv);
      } catch (e) {
        return e;
      }
      return undefined;
    });
    expect(error).toBeInstanceOf(CommanderError);
    expect((error as Error).message).toMatch(message);
  });
});
