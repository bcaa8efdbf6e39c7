import { Command, InvalidArgumentError, Option } from 'commander';
import type { InspectOptions } from './run-inspect.js';

/** The same rule the library applies to aliases, checked here so a typo is a usage error (exit 2). */
const ALIAS_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** Parses `--alias` (shared by the commands that connect). */
export function alias(value: string): string {
  if (!ALIAS_PATTERN.test(value)) {
    throw new InvalidArgumentError(`--alias must be 1-64 letters, digits, "_", "." or "-", got "${value}".`);
  }
  return value;
}

function interval(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 250 || ms > 3_600_000) {
    throw new InvalidArgumentError(`--interval must be an integer from 250 to 3600000 (ms), got "${value}".`);
  }
  return ms;
}

function resultTtl(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 0) {
    throw new InvalidArgumentError(`--result-ttl must be an integer number of ms (0 or more), got "${value}".`);
  }
  return ms;
}

function warningRatio(value: string): number {
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0.01 || ratio > 1) {
    throw new InvalidArgumentError(`--memory-warning-ratio must be a number from 0.01 to 1, got "${value}".`);
  }
  return ratio;
}

/**
 * Runs `load` with the CI markers hidden when a person is at the terminal.
 * Ink reads `CI` once, as it loads, and then draws only the last frame, which
 * leaves a blank screen; a shell on a CI runner (or an SSH session into one)
 * usually has `CI` set, yet a TTY there is a person who wants the live UI.
 */
async function withoutCiMarkers<T>(load: () => Promise<T>): Promise<T> {
  if (!process.stdout.isTTY) return load();
  const saved = { CI: process.env['CI'], CONTINUOUS_INTEGRATION: process.env['CONTINUOUS_INTEGRATION'] };
  delete process.env['CI'];
  delete process.env['CONTINUOUS_INTEGRATION'];
  try {
    return await load();
  } finally {
    for (const [key, value] of Object.entries(saved)) if (value !== undefined) process.env[key] = value;
  }
}

/** Why a password belongs in REDIS_URL, shown below the options. */
export const CREDENTIALS_HELP = `
A Redis URL with a password is best given in REDIS_URL: any user of the machine
can read a process's arguments (ps), not its environment. A password given with
--redis is masked in the process's arguments once the inspector has started.`;

/** The `inspect` subcommand; every flag has an environment variable behind it. */
export function inspectCommand(): Command {
  return new Command('inspect')
    .description('Watch and operate the queues of a Threadmill backend in a full-screen terminal UI.')
    .addOption(
      new Option('--redis <url>', 'Redis to connect to (redis://, rediss:// or unix:// URL); prefer REDIS_URL')
        .env('REDIS_URL')
        .default('redis://localhost:6379'),
    )
    .addOption(
      new Option('--alias <name>', 'backend alias (keyspace) to inspect')
        .env('THREADMILL_ALIAS')
        .argParser(alias)
        .default('default'),
    )
    .addOption(new Option('--interval <ms>', 'how often to refresh, in milliseconds').argParser(interval).default(2000))
    .addOption(
      new Option('--result-ttl <ms>', "the applications' resultTtlMs, which the memory projection uses")
        .env('THREADMILL_RESULT_TTL_MS')
        .argParser(resultTtl)
        .default(86_400_000),
    )
    .addOption(
      new Option('--memory-warning-ratio <ratio>', 'share of maxmemory at which to warn')
        .env('THREADMILL_MEMORY_WARNING_RATIO')
        .argParser(warningRatio)
        .default(0.8),
    )
    .helpOption('-h, --help', 'show this help')
    .addHelpText('after', CREDENTIALS_HELP)
    .allowExcessArguments(false)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .action(async (options: InspectOptions, command: Command) => {
      // Loaded only now: the library and Ink take seconds to load, --help and usage errors should not wait.
      // The Redis URL is checked with the library's masking, so its usage error waits for the library alone.
      const { hideCredentialsFromProcessList, redisUrlProblem } = await import('./redis-url.js');
      hideCredentialsFromProcessList();
      const source = command.getOptionValueSource('redis') === 'env' ? 'REDIS_URL' : '--redis';
      const problem = redisUrlProblem(options.redis, source);
      if (problem) command.error(`error: ${problem}`, { exitCode: 2, code: 'commander.invalidArgument' });
      const { runInspect } = await withoutCiMarkers(() => import('./run-inspect.js'));
      process.exitCode = await runInspect(options);
    });
}
