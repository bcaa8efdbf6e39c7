import {
  ConsoleLogger,
  Module,
  type DynamicModule,
  type INestMicroservice,
  type LoggerService,
  type LogLevel,
  type Provider,
  type Type,
} from '@nestjs/common';
import type { NestApplicationContextOptions } from '@nestjs/common/interfaces/nest-application-context-options.interface.js';
import { NestFactory } from '@nestjs/core';
import { CommanderError } from 'commander';
import { randomInt } from 'node:crypto';
import type { RunEvents } from '../events/run-events.js';
import type { TaskInspector } from '../inspector/task-inspector.js';
import { getRunEventsToken, getTaskInspectorToken } from '../module/backend-tokens.js';
import { readWorkerCommandLine, type GivenServerOptions, type WorkerCommandLine } from './worker-cli.js';
import { loadPoolMetrics } from './load-pool-metrics.js';
import {
  isStopMessage,
  POOL_SLOT_ENV,
  readSafetyWarnings,
  SAFETY_WARNINGS_ENV,
  type EndingMessage,
  type ReadyMessage,
} from './pool-message.js';
import { adoptSafetyWarnings, loggedSafetyWarnings } from '../backend/redis/safety-warnings.js';
import { Supervisor } from './supervisor.js';
import { ThreadmillServer } from '../transport/threadmill-server.js';
import type { WorkerRole } from '../worker/worker-options.interface.js';

/**
 * Options of {@link runWorker}: where its command line and script are, and
 * the Nest application options of every process of the pool (a custom
 * `logger`, such as pino's or a `ConsoleLogger` subclass, `bufferLogs`, ...).
 * Each process runs the entry script, so each calls `runWorker` with them.
 */
export interface RunWorkerOptions extends Omit<NestApplicationContextOptions, 'abortOnError'> {
  /**
   * Command-line arguments (without `node` and the script).
   * @defaultValue `process.argv.slice(2)`
   */
  argv?: readonly string[];
  /**
   * The script worker processes run; it must call `runWorker` for the same module.
   * @defaultValue `process.argv[1]`, the running entry point
   */
  script?: string;
}

/** Root of a worker process's application: the application's module and the process's own providers. */
@Module({})
class ThreadmillWorkerRootModule {
  /** @param providers the process's own services, created before the worker starts (metrics) */
  static wrap(module: Type | DynamicModule, providers: Provider[]): DynamicModule {
    return { module: ThreadmillWorkerRootModule, imports: [module], providers };
  }
}

type Logger = LoggerService;

/** What a process gives its application besides the module: the Nest options, the command line's server options. */
interface WorkerAppSetup {
  readonly appOptions: Omit<RunWorkerOptions, 'argv' | 'script'>;
  readonly given: GivenServerOptions;
  /** The backend the pool consumes (`--backend`). */
  readonly backend: string;
}

/**
 * The process's worker application: a Nest microservice served by a
 * `ThreadmillServer` in the process's role. `app.close()` drains the server
 * before Nest destroys any provider.
 */
async function createWorkerApp(
  module: Type | DynamicModule,
  { appOptions, given, backend }: WorkerAppSetup,
  role: WorkerRole,
  logger: Logger,
  providers: Provider[] = [],
): Promise<{ app: INestMicroservice; server: ThreadmillServer }> {
  try {
    // Only what the flags and environment set: the rest comes from the
    // application's ThreadmillWorkerModule, else the defaults.
    const server = new ThreadmillServer({ ...given, backend, broker: role.broker, maxTasks: role.maxTasks }, role);
    const app = await NestFactory.createMicroservice(ThreadmillWorkerRootModule.wrap(module, providers), {
      ...appOptions,
      strategy: server,
      // The pool's logger (the application's, or a console logger at the levels given).
      logger: appOptions.logger === false ? false : logger,
      abortOnError: false,
    });
    await app.listen();
    return { app, server };
  } catch (error) {
    logger.error((error as Error).message, undefined, 'Threadmill');
    return process.exit(1);
  }
}

/**
 * The pool's metrics code when `--metrics-port` asks for it (prom-client is
 * optional); exits with a clear line when prom-client is missing.
 */
async function poolMetrics(commandLine: WorkerCommandLine, logger: Logger) {
  if (commandLine.metricsPort === 0) return undefined;
  return loadPoolMetrics().catch((error: Error) => {
    logger.error(error.message, undefined, 'Threadmill');
    return process.exit(1);
  });
}

/** One consuming process of the pool (or the only one). */
async function runPoolMember(
  module: Type | DynamicModule,
  setup: WorkerAppSetup,
  commandLine: WorkerCommandLine,
  slot: number,
  logger: Logger,
): Promise<void> {
  // The supervisor said them once for the pool (it connected before it forked this process).
  adoptSafetyWarnings(readSafetyWarnings(process.env[SAFETY_WARNINGS_ENV]));
  const { maxTasks, maxTasksJitter } = commandLine;
  const limit = maxTasks > 0 ? maxTasks + randomInt(maxTasksJitter + 1) : 0;
  // A signal while the process boots (a pool stopped just after it started
  // it) is kept, and the drain runs once the application is up: Node's
  // default would kill the process, and the pool would report a hard stop.
  let signalledWhileBooting: NodeJS.Signals | undefined;
  // Signals received: the second one stops hard (a stop the supervisor asked for does not count).
  let signals = 0;
  const whileBooting = (signal: NodeJS.Signals) => {
    if (++signals > 1) process.exit(1); // nothing claimed yet to hand back
    signalledWhileBooting = signal;
  };
  process.on('SIGTERM', whileBooting);
  process.on('SIGINT', whileBooting);
  const metricsCode = await poolMetrics(commandLine, logger);
  // A provider, so it listens before the consumer starts at bootstrap.
  const metricsProviders: Provider[] = metricsCode
    ? [
        {
          provide: metricsCode.MemberMetrics,
          useFactory: (events: RunEvents) => new metricsCode.MemberMetrics(events),
          inject: [getRunEventsToken(commandLine.backend)],
        },
      ]
    : [];
  const { app, server: worker } = await createWorkerApp(
    module,
    setup,
    { consume: true, broker: false, slot, maxTasks: limit },
    logger,
    metricsProviders,
  );
  const metrics = metricsCode && app.get(metricsCode.MemberMetrics);

  let stopping = false;
  const stop = async (reason: string, code: number) => {
    stopping = true;
    logger.log(`${reason}: draining`, 'Threadmill');
    const clean = await worker.close();
    // After the drain, so the supervisor keeps the last runs' counts.
    await metrics?.close();
    await app.close();
    logger.log(`Stopped (${worker.completed} run(s) done)`, 'Threadmill');
    // Abandoning running attempts at the shutdown timeout is not a clean exit.
    process.exit(clean ? code : 1);
  };
  const stopHard = (reason: string) => {
    logger.warn(`${reason}: stopping hard; the reaper recovers unfinished runs.`, 'Threadmill');
    worker.abort();
    process.exit(1);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1) return stopHard(`Second ${signal}`);
    if (!stopping) void stop(`Received ${signal}`, 0);
  };
  // The supervisor's stop: a drain already under way (the same Ctrl-C reached
  // this process too) goes on.
  process.on('message', (message) => {
    if (!isStopMessage(message)) return;
    if (message.hard) stopHard('The pool stops hard');
    else if (!stopping) void stop('The pool stops', 0);
  });
  process.off('SIGTERM', whileBooting);
  process.off('SIGINT', whileBooting);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (signalledWhileBooting) void stop(`Received ${signalledWhileBooting} while starting`, 0);
  // The supervisor holds a stop back until now (see ReadyMessage).
  const ready: ReadyMessage = { type: 'threadmill:ready' };
  process.send?.(ready);
  // The supervisor is gone (killed): do not linger as an orphan.
  process.once('disconnect', () => {
    if (!stopping) void stop('The supervisor is gone', 1);
  });

  const end = await worker.ended;
  if (stopping || end === 'stopped') return;
  if (end === 'crashed') return stop('The consumer crashed', 1);
  const message: EndingMessage = { type: 'threadmill:ending', reason: end };
  if (process.send) await new Promise<void>((resolve) => process.send!(message, () => resolve()));
  await stop(end === 'empty' ? 'Queues are empty' : 'Reached --max-tasks', 0);
}

/** The supervisor: runs the broker and keeps `--workers` pool members alive. */
async function runSupervisor(
  module: Type | DynamicModule,
  setup: WorkerAppSetup,
  commandLine: WorkerCommandLine,
  options: RunWorkerOptions,
  logger: Logger,
): Promise<void> {
  const metricsCode = await poolMetrics(commandLine, logger);
  // A provider, so it counts the broker's outcomes from its first pass.
  const metricsProviders: Provider[] = metricsCode
    ? [
        {
          provide: metricsCode.PoolMetrics,
          useFactory: (events: RunEvents, inspector: TaskInspector) => new metricsCode.PoolMetrics(events, inspector),
          inject: [getRunEventsToken(commandLine.backend), getTaskInspectorToken(commandLine.backend)],
        },
      ]
    : [];
  const { app, server: worker } = await createWorkerApp(
    module,
    setup,
    { consume: false, broker: true, slot: 0, maxTasks: 0 },
    logger,
    metricsProviders,
  );
  const metrics = metricsCode && app.get(metricsCode.PoolMetrics);
  const supervisor = new Supervisor(
    {
      workers: commandLine.workers,
      script: options.script ?? process.argv[1]!,
      argv: options.argv ?? process.argv.slice(2),
      execArgv: process.execArgv,
      // The flag's, else the application's ThreadmillWorkerModule's, as its processes use it.
      shutdownTimeoutMs: worker.workerSettings.shutdownTimeoutMs,
      memberEnv: () => ({ [SAFETY_WARNINGS_ENV]: JSON.stringify(loggedSafetyWarnings()) }),
    },
    (child) => metrics?.attach(child),
  );
  if (metrics) {
    await metrics.listen(commandLine.metricsPort, commandLine.metricsHost).catch(async (error: Error) => {
      logger.error(error.message, undefined, 'Threadmill');
      await app.close();
      process.exit(1);
    });
  }
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    logger.log(
      signals === 1 ? `Received ${signal}: draining the pool` : `Second ${signal}: stopping the pool hard`,
      'Threadmill',
    );
    supervisor.stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  logger.log(`Supervising ${commandLine.workers} worker process(es); the broker runs here`, 'Threadmill');
  supervisor.start();

  const code = await supervisor.done;
  await worker.close();
  await metrics?.close();
  await app.close();
  logger.log(code === 0 ? 'Pool stopped' : 'Pool stopped hard', 'Threadmill');
  process.exit(code);
}

/**
 * Runs the worker pool for `module`: a module that imports `ThreadmillModule`
 * and the modules providing the application's tasks. Call it from the worker
 * application's entry script: the supervisor re-runs that script for each of
 * the `--workers` processes.
 *
 * The pool consumes one backend: the default one, or the one `--backend`
 * names (a `ThreadmillModule`'s `name`); run one pool per backend to consume
 * several. The supervisor runs the broker and restarts processes that die. Each
 * process consumes with `--concurrency` slots until SIGTERM or SIGINT; then it
 * stops claiming, hands prefetched runs back, finishes running attempts (up
 * to `--shutdown-timeout`), flushes acknowledgements and exits 0, before Nest
 * destroys any provider. A second signal stops hard (exit 1): what was left is
 * recovered by the reaper.
 *
 * It ends the process itself (exit 0 after a drain, 1 when the application
 * cannot start, saying why), so an entry script need not await it: `void`
 * compiles in a CommonJS app too, where top-level `await` does not.
 *
 * @example
 * ```ts
 * // worker.ts: the worker application's entry script
 * import { runWorker } from '@threadmill/nestjs';
 * import { WorkerModule } from './worker.module.js';
 *
 * void runWorker(WorkerModule);
 * ```
 */
export async function runWorker(module: Type | DynamicModule, options: RunWorkerOptions = {}): Promise<void> {
  let commandLine: WorkerCommandLine;
  let given: GivenServerOptions;
  try {
    ({ commandLine, given } = readWorkerCommandLine(options.argv ?? process.argv.slice(2)));
  } catch (error) {
    // commander already printed the message (naming the flag) and the usage hint.
    if (error instanceof CommanderError) process.exit(error.code === 'commander.helpDisplayed' ? 0 : 2);
    throw error;
  }
  const { argv: _argv, script: _script, ...appOptions } = options;
  const logger = workerLogger(appOptions.logger, commandLine);
  const setup: WorkerAppSetup = { appOptions, given, backend: commandLine.backend };
  const slot = process.env[POOL_SLOT_ENV];
  if (slot !== undefined) return runPoolMember(module, setup, commandLine, Number(slot), logger);
  return runSupervisor(module, setup, commandLine, options, logger);
}

/**
 * The logger of the pool's own lines: the application's when it gives one,
 * else a console logger in `--log-format`, at the levels given (errors only
 * when Nest's logging is off: a failed boot must still say why).
 */
function workerLogger(given: RunWorkerOptions['logger'], commandLine: WorkerCommandLine): Logger {
  if (given !== undefined && given !== false && !Array.isArray(given)) return given;
  const logLevels: LogLevel[] | undefined = given === false ? ['fatal', 'error'] : given;
  return new ConsoleLogger({ json: commandLine.logFormat === 'json', prefix: 'Threadmill', logLevels });
}
