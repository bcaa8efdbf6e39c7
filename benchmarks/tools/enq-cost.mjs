#!/usr/bin/env node
// Redis cost of the enqueue script, per run, one by one and in bulk (INFO commandstats).
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { enqueueOneByOne } = await import(join(dist, 'lib/phases.js'));
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench-single');
const admin = new Redis(server.url);
const n = 20000;
const report = async (label) => {
  const lines = (await admin.info('commandstats'))
    .split('\r\n')
    .filter((l) => l.startsWith('cmdstat') && !l.includes('config'));
  let total = 0;
  const parts = lines.map((l) => {
    const [, name, usec] = /cmdstat_([^:]+):calls=\d+,usec=(\d+)/.exec(l);
    if (name !== 'evalsha') total += Number(usec);
    return [name, Number(usec)];
  });
  const script = parts.find(([name]) => name === 'evalsha')[1];
  console.log(
    `${label}: script ${(script / n).toFixed(2)} µs/run, of which commands ${(total / n).toFixed(2)} µs/run: ` +
      parts
        .filter(([name]) => name !== 'evalsha')
        .map(([name, us]) => `${name} ${(us / n).toFixed(2)}`)
        .join(', '),
  );
};
await producer.enqueue(payload(0));
await admin.config('RESETSTAT');
await enqueueOneByOne(producer, n, 64);
await report('one by one');
await admin.config('RESETSTAT');
for (let i = 0; i < n; i += 1000) await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
await report('bulk (1000)');
await producer.close();
admin.disconnect();
await server.stop();
