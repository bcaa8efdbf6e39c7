#!/usr/bin/env node
// What a bulk store costs end to end beside its script: calls of 1,000 runs
// of the benchmark's payload, built before the clock starts (so no
// validation, JSON encoding or id minting is timed), stored one after the
// other through the backend, against the enqueue script's own time in Redis
// (INFO commandstats). The difference is the encoding of the call's
// arguments, the socket round trip and the reply: the tool also times the
// encoding alone (encodeStore) and the same arguments sent to a script that
// returns at once (encoding, transfer, Redis reading them, the reply).
// Usage: node store-call.mjs [calls=300]
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRun } from './bench-run.mjs';

const calls = Number(process.argv[2] ?? 300);
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { RedisConnections } = await import(join(lib, 'backend/redis/redis-connections.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { newRunId } = await import(join(lib, 'codec/run-id.js'));
const { encodeStore } = await import(join(lib, 'backend/redis/scripts/enqueue-args.js'));

const server = await RedisServer.start();
const admin = new Redis(server.url);
const connections = new RedisConnections(server.url, 'store-call', 5_000);
const backend = new RedisTaskBackend(connections, {
  alias: 'store-call',
  leaseTtlMs: 60_000,
  resultTtlMs: 0,
  batchSize: 300,
});
const batches = Array.from({ length: calls + 1 }, (_call, c) =>
  Array.from({ length: 1_000 }, (_, i) => ({ ...benchRun(newRunId, c * 1_000 + i), queue: 'bench' })),
);
await backend.store(batches[0]); // warm-up: the script's load, the JIT
await admin.config('RESETSTAT');
const started = performance.now();
for (let c = 1; c <= calls; c++) await backend.store(batches[c]);
const perCall = (performance.now() - started) / calls;
const stats = await admin.info('commandstats');
const script = Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(stats)[1]) / 1_000;

const encodeStarted = performance.now();
const encoded = batches.slice(1).map((runs) => encodeStore(['bench'], runs, () => 1));
const encode = (performance.now() - encodeStarted) / calls;
const client = connections.client;
const noop = await client.script('LOAD', 'return 1');
const sendStarted = performance.now();
for (const args of encoded) await client.evalsha(noop, 0, ...args);
const send = (performance.now() - sendStarted) / calls;
console.log(
  `a call of 1,000 prebuilt runs: ${perCall.toFixed(2)} ms end to end, of which the script ${script.toFixed(2)} ms ` +
    `in Redis and ${(perCall - script).toFixed(2)} ms the rest; encoding its arguments alone ${encode.toFixed(2)} ms, ` +
    `sending them to a script that returns at once ${send.toFixed(2)} ms`,
);
await connections.close();
admin.disconnect();
await server.stop();
