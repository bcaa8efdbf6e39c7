import { Logger } from '@nestjs/common';
import { createInspector, RedisUnavailableError, type StandaloneInspector } from '@threadmill/nestjs';
import { flowLines } from './flow-table.js';

/** What `threadmill flow` was asked for. */
export interface FlowOptions {
  readonly redis: string;
  readonly alias: string;
  /** Print the flow as JSON (`TaskInspector.flow`'s view) instead of a table. */
  readonly json: boolean;
}

/** Where the command writes: the process's streams, or a test's. */
export interface FlowOutput {
  out(text: string): void;
  err(text: string): void;
  /** Cut table lines to this width (a terminal's); undefined: whole lines (a pipe). */
  readonly columns?: number;
}

/** How long the command waits for Redis before saying it cannot reach it. */
const CONNECT_TIMEOUT_MS = 5_000;

const processOutput: FlowOutput = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  columns: process.stdout.isTTY ? process.stdout.columns : undefined,
};

/**
 * Prints flow `id`: its state and counts, then its nodes, each after its
 * dependencies, with their live statuses (or the JSON of the view).
 * @returns the exit code: 0 when printed, 1 when Redis cannot be reached or no flow has the id
 */
export async function runFlow(id: string, options: FlowOptions, output: FlowOutput = processOutput): Promise<number> {
  // The library logs through Nest; a one-shot command says what went wrong in one line of its own.
  Logger.overrideLogger(false);
  let standalone: StandaloneInspector;
  try {
    standalone = await createInspector({
      connection: options.redis,
      alias: options.alias,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
  } catch (error) {
    if (!(error instanceof RedisUnavailableError)) throw error;
    const cause = error.cause instanceof Error ? error.cause.message : String(error.cause);
    output.err(
      `threadmill flow: cannot reach Redis at ${error.where}: ${cause}. Start Redis, or set REDIS_URL (or pass --redis URL).\n`,
    );
    return 1;
  }
  try {
    const { inspector } = standalone;
    const flow = await inspector.flow(id);
    if (!flow) {
      output.err(
        `threadmill flow: no flow "${id}" on alias "${options.alias}": it never existed, or it ended and its ` +
          'record expired (a flow is kept as long as the results of its runs). Check the id and --alias.\n',
      );
      return 1;
    }
    if (options.json) output.out(`${JSON.stringify(flow, null, 2)}\n`);
    else output.out(`${flowLines(flow, inspector.now(), output.columns).join('\n')}\n`);
    return 0;
  } finally {
    await standalone.close();
  }
}
