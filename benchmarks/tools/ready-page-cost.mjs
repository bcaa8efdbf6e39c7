#!/usr/bin/env node
// What a page of ready runs costs at increasing depth: bulk-stores 200,000
// runs of the benchmark's payload (and one of another priority, so the ready
// set is not empty) into one queue of a fresh redis-server, then times a page
// of 100 at offsets 0, 100,000 and 199,900 (the inspector's and dashboard's
// `list(queue, 'ready', offset, limit)`).
// Usage: node ready-page-cost.mjs [built library = libs/threadmill/dist]
import { RedisServer } from '@threadmill/nestjs/testing';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRun } from './bench-run.mjs';

const lib = resolve(process.argv[2] ?? fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url)));
const { RedisConnections } = await import(join(lib, 'backend/redis/redis-connections.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { newRunId } = await import(join(lib, 'codec/run-id.js'));

const server = await RedisServer.start();
const connections = new RedisConnections(server.url, 'page', 5_000);
const backend = new RedisTaskBackend(connections, {
  alias: 'page',
  leaseTtlMs: 60_000,
  resultTtlMs: 0,
  batchSize: 300,
});
for (let call = 0; call < 200; call++) {
  await backend.store(
    Array.from({ length: 1_000 }, (_, i) => ({ ...benchRun(newRunId, call * 1_000 + i), queue: 'bench' })),
  );
}
await backend.store([{ ...benchRun(newRunId, 0), queue: 'bench', priority: 5 }]);
for (const offset of [0, 100_000, 199_900]) {
  const started = performance.now();
  const page = await backend.list('bench', 'ready', offset, 100);
  console.log(`offset ${offset}: ${page.length} ids in ${(performance.now() - started).toFixed(1)} ms`);
}
await connections.close();
await server.stop();
