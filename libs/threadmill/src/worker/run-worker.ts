import { ConsoleLogger, Module, type DynamicModule, type OnModuleDestroy, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommanderError } from 'commander';
import { parseWorkerCommandLine, type WorkerCommandLine } from './cli/worker-cli.js';
import { ThreadmillWorkerModule } from './threadmill-worker.module.js';
import { WorkerService } from './worker.service.js';

/** Options of {@link runWorker}. */
export interface RunWorkerOptions {
  /**
   * Command-line arguments (without `node` and the script).
   * @defaultValue `process.argv.slice(2)`
   */
  argv?: readonly string[];
}

/**
 * Root of the worker application. Nest destroys the root module first, so
 * its hook drains the worker before any application provider is destroyed,
 * even when the app is closed without a signal.
 */
@Module({})
class ThreadmillWorkerRootModule implements OnModuleDestroy {
  constructor(private readonly worker: WorkerService) {}

  static wrap(module: Type | DynamicModule, commandLine: WorkerCommandLine, slot: number): DynamicModule {
    const { logFormat: _format, ...worker } = commandLine;
    return {
      module: ThreadmillWorkerRootModule,
      imports: [module, ThreadmillWorkerModule.register({ ...worker, broker: true, slot })],
    };
  }

  async onModuleDestroy(): Promise<void> {
    await this.worker.drain();
  }
}

function exitWithUsageError(error: CommanderError): never {
  // commander already printed the message (naming the flag) and the usage hint.
  process.exit(error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? 0 : 2);
}

/**
 * Runs the worker application for `module`: a module that imports
 * `ThreadmillModule` and the modules providing the application's tasks.
 *
 * It consumes the queues until SIGTERM or SIGINT; then it stops claiming,
 * hands prefetched runs back, finishes running attempts (up to
 * `--shutdown-timeout`), flushes acknowledgements and exits 0. A second
 * signal stops hard (exit 1): what was left is recovered by the reaper.
 *
 * @example
 * ```ts
 * // apps/worker/src/main.ts
 * import { runWorker } from '@threadmill/nestjs';
 * import { WorkerModule } from './worker.module.js';
 * await runWorker(WorkerModule);
 * ```
 */
export async function runWorker(module: Type | DynamicModule, options: RunWorkerOptions = {}): Promise<void> {
  let commandLine: WorkerCommandLine;
  try {
    commandLine = parseWorkerCommandLine(options.argv ?? process.argv.slice(2));
  } catch (error) {
    if (error instanceof CommanderError) exitWithUsageError(error);
    throw error;
  }
  const logger = new ConsoleLogger({ json: commandLine.logFormat === 'json', prefix: 'Threadmill' });
  const app = await NestFactory.createApplicationContext(ThreadmillWorkerRootModule.wrap(module, commandLine, 0), {
    logger,
    abortOnError: false,
  }).catch((error: Error) => {
    logger.error(error.message, undefined, 'Threadmill');
    process.exit(1);
  });
  const worker = app.get(WorkerService);

  let stopping = false;
  const stop = async (reason: string, code: number) => {
    stopping = true;
    logger.log(`${reason}: draining`, 'Threadmill');
    await worker.drain();
    await app.close();
    logger.log(`Stopped (${worker.completed} run(s) done)`, 'Threadmill');
    process.exit(code);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn(`Second ${signal}: stopping hard; the reaper recovers unfinished runs.`, 'Threadmill');
      worker.abort();
      process.exit(1);
    }
    void stop(`Received ${signal}`, 0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  const end = await worker.ended;
  if (stopping || end === 'stopped') return;
  if (end === 'crashed') await stop('The consumer crashed', 1);
  else await stop(end === 'empty' ? 'Queues are empty' : 'Reached --max-tasks', 0);
}
