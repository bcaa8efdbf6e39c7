import { Logger } from '@nestjs/common';
import { createInspector, RedisUnavailableError, type StandaloneInspector } from '@threadmill/nestjs';
import { render } from 'ink';
import { constants } from 'node:os';
import { createElement } from 'react';
import { App } from '../ui/app.js';

/** What `threadmill inspect` was asked for. */
export interface InspectOptions {
  readonly redis: string;
  readonly alias: string;
  /** Refresh interval, ms. */
  readonly interval: number;
  /** The applications' result TTL, ms, for the memory projection. */
  readonly resultTtl: number;
  /** Share of maxmemory at which the header and status line warn. */
  readonly memoryWarningRatio: number;
}

/** How long the inspector waits for Redis before saying it cannot reach it. */
const CONNECT_TIMEOUT_MS = 5_000;
/** Switches to the terminal's alternate screen and back, so the shell's scrollback survives the inspector. */
const ALTERNATE_SCREEN = '\u001B[?1049h';
const MAIN_SCREEN = '\u001B[?1049l';

/** The one line printed when Redis does not answer: where, why, and what to do. */
function unreachable(error: RedisUnavailableError): string {
  const cause = error.cause instanceof Error ? error.cause.message : String(error.cause);
  return `threadmill inspect: cannot reach Redis at ${error.where}: ${cause}. Start Redis, or set REDIS_URL (or pass --redis URL).`;
}

/**
 * Connects, runs the full-screen inspector until `q` (or Ctrl+C, SIGTERM,
 * SIGHUP), then closes the Redis connection.
 * @returns the exit code: 0 after `q` or Ctrl+C, 128 + the signal's number after SIGTERM or SIGHUP,
 *   1 when Redis cannot be reached or the terminal cannot host it
 */
export async function runInspect(options: InspectOptions): Promise<number> {
  // The library logs through Nest; its lines would tear the full-screen UI (and add to the one-line
  // connection error). Refresh failures show in the status line instead.
  Logger.overrideLogger(false);
  let standalone: StandaloneInspector;
  try {
    standalone = await createInspector({
      connection: options.redis,
      alias: options.alias,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      resultTtlMs: options.resultTtl,
      memoryWarningRatio: options.memoryWarningRatio,
    });
  } catch (error) {
    if (!(error instanceof RedisUnavailableError)) throw error;
    process.stderr.write(`${unreachable(error)}\n`);
    return 1;
  }
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write('threadmill inspect: needs an interactive terminal (stdin and stdout must be a TTY).\n');
    await standalone.close();
    return 1;
  }
  process.stdout.write(ALTERNATE_SCREEN);
  const instance = render(
    createElement(App, {
      inspector: standalone.inspector,
      describe: standalone.describe,
      alias: options.alias,
      intervalMs: options.interval,
    }),
    { exitOnCtrlC: true },
  );
  // A closed SSH session (SIGHUP) or a kill (SIGTERM) leaves like `q` does, restoring the terminal,
  // and exits as killed by that signal.
  let code = 0;
  const leave = (signal: NodeJS.Signals) => {
    code = 128 + constants.signals[signal];
    instance.unmount();
  };
  process.on('SIGTERM', leave);
  process.on('SIGHUP', leave);
  try {
    await instance.waitUntilExit();
  } finally {
    process.off('SIGTERM', leave);
    process.off('SIGHUP', leave);
    process.stdout.write(MAIN_SCREEN);
    await standalone.close();
  }
  return code;
}
