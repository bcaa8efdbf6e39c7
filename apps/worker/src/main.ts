import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { WorkerModule } from './worker.module.js';

// The worker application as one Nest microservice: a process of its own
// (scale it with replicas). pool.ts runs the same module as a process pool.

if (process.argv.length > 2) {
  // Refuse the pool's flags rather than ignore them: whoever passes --workers expects the pool.
  console.error(
    `main.js takes no flags (got "${process.argv.slice(2).join(' ')}"): it reads THREADMILL_CONCURRENCY and ` +
      'THREADMILL_PREFETCH. The worker pool, which takes --workers, --concurrency and the rest, is pool.js.',
  );
  process.exit(2);
}

/** An integer setting from the environment, else the server's default. */
function integerFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`${name} must be a whole number, got "${value}".`);
  return Number(value);
}

const server = new ThreadmillServer({
  concurrency: integerFromEnv('THREADMILL_CONCURRENCY'),
  prefetch: integerFromEnv('THREADMILL_PREFETCH'),
});
const app = await NestFactory.createMicroservice(WorkerModule, {
  strategy: server,
  logger: ['error', 'warn', 'log'],
  // A failed boot throws (and the process exits 1) instead of aborting with a core dump.
  abortOnError: false,
});
await app.listen();

const logger = new Logger('Worker');
let stopping = false;
async function stop(reason: string, code: number): Promise<void> {
  if (stopping) {
    // A second signal: the reaper recovers what was running.
    logger.warn(`${reason} again: stopping hard`);
    server.abort();
    process.exit(1);
  }
  stopping = true;
  logger.log(`${reason}: draining`);
  // Drains the server (stops claiming, hands prefetched runs back, finishes
  // running attempts) before Nest destroys the providers they use.
  await app.close();
  logger.log(`Stopped (${server.completed} run(s) done)`);
  // The drain's outcome: false when it abandoned running attempts at the shutdown timeout.
  process.exit((await server.close()) ? code : 1);
}
process.on('SIGTERM', () => void stop('Received SIGTERM', 0));
process.on('SIGINT', () => void stop('Received SIGINT', 0));
void server.ended.then(async (end) => {
  if (end === 'crashed') await stop('The consumer crashed', 1);
});
