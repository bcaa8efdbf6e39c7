/**
 * Redis's cost of the enqueue script per run, one by one and in bulk, and of the commands it makes (INFO commandstats).
 *
 * Run: `node dist/benchmarks/tools/enq-cost.js` after `npm run build`.
 *
 * 20,000 runs of the benchmark's payload each way: one by one from 64
 * callers that each await their enqueue, then in calls of 1,000.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { enqueueOneByOne } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { enqueueInBulk } from '../lib/tool-support.js';
import { payload } from '../workers/protocol.js';

const n = 20_000;
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench-single');
const admin = new Redis(server.url);

/** Prints the script's time per run and that of each command it made, since the last reset. */
async function report(label: string): Promise<void> {
  const stats = await admin.info('commandstats');
  const commands = [...stats.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)]
    .map(([, name, usec]) => ({ name: name!, us: Number(usec) }))
    .filter(({ name }) => !name.startsWith('config'));
  const script = commands.find(({ name }) => name === 'evalsha')?.us ?? 0;
  const made = commands.filter(({ name }) => name !== 'evalsha');
  const inCommands = made.reduce((sum, { us }) => sum + us, 0);
  console.log(
    `${label}: script ${(script / n).toFixed(2)} µs/run, of which commands ${(inCommands / n).toFixed(2)} µs/run: ` +
      made.map(({ name, us }) => `${name} ${(us / n).toFixed(2)}`).join(', '),
  );
}

await producer.enqueue(payload(0));
await admin.config('RESETSTAT');
await enqueueOneByOne(producer, n, 64);
await report('one by one');
await admin.config('RESETSTAT');
await enqueueInBulk(producer, n);
await report('bulk (1000)');
await producer.close();
admin.disconnect();
await server.stop();
