import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { alias, CREDENTIALS_HELP } from '../inspect/inspect-command.js';
import type { FlowOptions } from './run-flow.js';

/** A flow id as the library takes one, checked here so a stray argument is a usage error (exit 2). */
function flowId(value: string): string {
  if (value.length === 0 || value.length > 200) {
    throw new InvalidArgumentError(`a flow id is 1-200 characters, got ${value.length}.`);
  }
  return value;
}

/** The `flow` subcommand: one flow's nodes, printed once. */
export function flowCommand(): Command {
  return new Command('flow')
    .description("Print a flow's state and its nodes, each after the nodes it depends on, with their live statuses.")
    .addArgument(
      new Argument('<id>', 'the flow id (what enqueueFlow, enqueueChain or enqueueBatch returned)').argParser(flowId),
    )
    .addOption(
      new Option('--redis <url>', 'Redis to connect to (redis://, rediss:// or unix:// URL); prefer REDIS_URL')
        .env('REDIS_URL')
        .default('redis://localhost:6379'),
    )
    .addOption(
      new Option('--alias <name>', 'backend alias (keyspace) of the flow')
        .env('THREADMILL_ALIAS')
        .argParser(alias)
        .default('default'),
    )
    .addOption(new Option('--json', "print the flow as JSON (TaskInspector.flow's view) instead of a table"))
    .helpOption('-h, --help', 'show this help')
    .addHelpText('after', CREDENTIALS_HELP)
    .allowExcessArguments(false)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .action(async (id: string, options: Omit<FlowOptions, 'json'> & { json?: boolean }, command: Command) => {
      // Loaded only now: the library takes seconds to load, --help and usage errors should not wait.
      const { hideCredentialsFromProcessList, redisUrlProblem } = await import('../inspect/redis-url.js');
      hideCredentialsFromProcessList();
      const source = command.getOptionValueSource('redis') === 'env' ? 'REDIS_URL' : '--redis';
      const problem = redisUrlProblem(options.redis, source);
      if (problem) command.error(`error: ${problem}`, { exitCode: 2, code: 'commander.invalidArgument' });
      const { runFlow } = await import('./run-flow.js');
      process.exitCode = await runFlow(id, { ...options, json: options.json === true });
    });
}
