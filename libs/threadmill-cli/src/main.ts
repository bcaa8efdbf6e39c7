import { Command, CommanderError } from 'commander';
import { flowCommand } from './flow/flow-command.js';
import { inspectCommand } from './inspect/inspect-command.js';

/** The `threadmill` command line. */
function program(): Command {
  return new Command('threadmill')
    .description('Threadmill for NestJS: tools for a durable Redis task queue.')
    .helpOption('-h, --help', 'show this help')
    .addCommand(inspectCommand())
    .addCommand(flowCommand())
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
}

/**
 * Runs the command line. Usage errors exit 2 (commander has printed the
 * message naming the flag); help exits 0.
 */
async function main(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync(argv as string[], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) {
      process.stderr.write(`threadmill: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    }
    const help = error.code === 'commander.helpDisplayed' || error.code === 'commander.version';
    process.exit(help ? 0 : 2);
  }
  // Redis is closed and the screen restored by now: nothing else should hold the process.
  process.exit(process.exitCode ?? 0);
}

await main(process.argv.slice(2));
