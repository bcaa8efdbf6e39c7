import { Command, InvalidArgumentError, Option } from 'commander';
import type { InspectOptions } from './run-inspect.js';

/** The same rule the library applies to aliases, checked here so a typo is a usage error (exit 2). */
const ALIAS_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

function redisUrl(value: string): string {
  if (!/^(redis|rediss|unix):\/\/./.test(value)) {
    throw new InvalidArgumentError(`--redis must be a redis://, rediss:// or unix:// URL, got "${value}".`);
  }
  return value;
}

function alias(value: string): string {
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

/** The `inspect` subcommand; every flag has an environment variable behind it. */
export function inspectCommand(): Command {
  return new Command('inspect')
    .description('Watch and operate the queues of a Threadmill backend in a full-screen terminal UI.')
    .addOption(
      new Option('--redis <url>', 'Redis to connect to (redis://, rediss:// or unix:// URL)')
        .env('REDIS_URL')
        .argParser(redisUrl)
        .default('redis://localhost:6379'),
    )
    .addOption(
      new Option('--alias <name>', 'backend alias (keyspace) to inspect')
        .env('THREADMILL_ALIAS')
        .argParser(alias)
        .default('default'),
    )
    .addOption(new Option('--interval <ms>', 'how often to refresh, in milliseconds').argParser(interval).default(2000))
    .helpOption('-h, --help', 'show this help')
    .allowExcessArguments(false)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .action(async (options: InspectOptions) => {
      // Loaded only now: the library and Ink take seconds to load, --help and usage errors should not wait.
      const { runInspect } = await withoutCiMarkers(() => import('./run-inspect.js'));
      process.exitCode = await runInspect(options);
    });
}
