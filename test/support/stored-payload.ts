import type { Redis } from 'ioredis';
import { doneRunFields } from '../../libs/threadmill/src/backend/redis/done-record.js';
import { freshPayload } from '../../libs/threadmill/src/backend/redis/fresh-record.js';
import type { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import type { NewRun } from '../../libs/threadmill/src/backend/task-backend.js';

/**
 * A run with a caller-chosen id and a payload written by hand, as a caller
 * of the backend's `store` passes it: READY now, at priority 0, on `queue`.
 */
export const handWritten = (id: string, payload: string, queue = 'default'): NewRun => ({
  id,
  queue,
  priority: 0,
  runAt: 0,
  delayMs: 0,
  leaseTtlMs: 0,
  idempotent: true,
  payload,
});

/**
 * A run's payload as stored: in its fresh record while no attempt has
 * settled, in its done record after a success from there, else in its run hash. Tests read it to prove it never changes,
 * and overwrite it to play a damaged or outdated payload.
 */
export async function readStoredPayload(backend: RedisTaskBackend, id: string): Promise<string | null> {
  const client = backend.connections.client;
  const record = await client.hget(backend.keys.fresh, id);
  if (record !== null) return freshPayload(record);
  const done = await client.hget(backend.keys.done, id);
  return done !== null ? (doneRunFields(done)['payload'] ?? null) : client.hget(backend.keys.run(id), 'payload');
}

export async function writeStoredPayload(backend: RedisTaskBackend, id: string, payload: string): Promise<void> {
  const client = backend.connections.client;
  const record = await client.hget(backend.keys.fresh, id);
  if (record === null) {
    await client.hset(backend.keys.run(id), 'payload', payload);
    return;
  }
  const head = record.slice(0, record.length - freshPayload(record).length);
  await client.hset(backend.keys.fresh, id, head + payload);
}

/** The ids a successful index (a list of ids, oldest first) names. */
export async function successfulIds(client: Pick<Redis, 'lrange'>, key: string): Promise<string[]> {
  return client.lrange(key, 0, -1);
}
