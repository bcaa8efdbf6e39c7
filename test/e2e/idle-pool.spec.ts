import { RedisServer } from '@threadmill/nestjs/testing';
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LUA_SOURCES } from '../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { WorkerProcess } from '../support/worker-process.js';

/**
 * MONITOR on a plain socket: each command Redis runs, as its arguments and
 * where it came from (`lua` for a script's own commands). ioredis's
 * `monitor()` can be handed a monitored line before it has switched the
 * connection to monitoring, and then throws from its reply handler.
 */
function monitor(url: string, seen: (args: string[], source: string) => void): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname, () => socket.write('MONITOR\r\n'));
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\r\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      // +1796565852.099222 [0 127.0.0.1:50556] "evalsha" "6dbf…" "11" …, after the +OK
      const match = /^\+\d+\.\d+ \[\d+ (\S+)\] (.*)$/.exec(line);
      if (match)
        seen(
          [...match[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map(([, arg]) => arg!),
          match[1]!,
        );
    }
  });
  return socket;
}

const scriptBySha = new Map(
  Object.entries(LUA_SOURCES).map(([name, lua]) => [createHash('sha1').update(lua).digest('hex'), name]),
);

describe('an idle pool', () => {
  // A Redis of its own, so MONITOR sees only this pool.
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server.stop());

  it('sends Redis nothing but blocked waits, the claim behind each, and its renewals (heartbeats)', async () => {
    const alias = uniqueAlias('idle');
    const app = await Harness.start({ options: { alias, connection: server.url } });
    const pool = WorkerProcess.start(alias, ['--workers', '2'], { REDIS_URL: server.url, LEASE_TTL_MS: '1500' });
    try {
      // Work once, so every part of the pool (claims, acks, broker) has been active.
      const { id } = await app.queue.enqueue('MathService.add', [1, 2]);
      await app.waitFor(id);
      await waitUntil('both processes are recorded', async () => (await app.backend.workers()).length === 2);
      // The broker passes again within its interval (1 s) of the run's lease,
      // then sleeps until woken: the window starts after that pass.
      await delay(2_500);

      const seen: string[] = [];
      const monitoring = monitor(server.url, (args, source) => {
        if (source === 'lua') return; // the commands a script runs: its call is already counted
        const command = args[0]!.toLowerCase();
        seen.push(command === 'evalsha' ? `evalsha:${scriptBySha.get(args[1]!) ?? args[1]}` : command);
      });
      await delay(3_000);
      monitoring.destroy();

      const kinds = new Set(seen);
      for (const kind of kinds) expect(['bzpopmin', 'evalsha:claim', 'evalsha:renew']).toContain(kind);
      // A consumer's claim follows its blocked wait (the broker's wait has
      // none); each process's first claim in the window may follow a wait
      // sent before it began.
      const claims = seen.filter((c) => c === 'evalsha:claim').length;
      expect(claims).toBeGreaterThan(0);
      expect(claims).toBeLessThanOrEqual(seen.filter((c) => c === 'bzpopmin').length + 2);
      // One renewal per process every lease/3 = 500 ms: about 12 in 3 s.
      const renewals = seen.filter((c) => c === 'evalsha:renew').length;
      expect(renewals).toBeGreaterThanOrEqual(8);
      expect(renewals).toBeLessThanOrEqual(16);
    } finally {
      pool.signal('SIGTERM');
      await pool.waitForExit();
      await app.close();
    }
  });

  it("stays blocked while its only ready run is parked by its key's rate limit: no claim loop", async () => {
    const alias = uniqueAlias('idle-parked');
    const app = await Harness.start({ options: { alias, connection: server.url } });
    const pool = WorkerProcess.start(alias, ['--workers', '2'], { REDIS_URL: server.url, LEASE_TTL_MS: '1500' });
    try {
      // Two runs of customer A per minute: the third waits parked, READY, for a minute.
      const runs = [];
      for (let n = 0; n < 3; n++) runs.push(await app.queue.enqueue('LimitedService.perCustomer', ['A', n]));
      await app.waitFor(runs[0]!.id);
      await app.waitFor(runs[1]!.id);
      await delay(1_000);

      const seen: string[] = [];
      const monitoring = monitor(server.url, (args, source) => {
        if (source === 'lua') return;
        const command = args[0]!.toLowerCase();
        seen.push(command === 'evalsha' ? `evalsha:${scriptBySha.get(args[1]!) ?? args[1]}` : command);
      });
      await delay(3_000);
      monitoring.destroy();

      // Each consumer's claim follows a wait that timed out (a third of the
      // lease, 500 ms), not a wake-up: about 12 in 3 s for 2 processes, where a
      // claim that woke its own queue would loop without pause.
      const claims = seen.filter((c) => c === 'evalsha:claim').length;
      expect(claims).toBeGreaterThan(0);
      expect(claims).toBeLessThanOrEqual(20);
      expect(claims).toBeLessThanOrEqual(seen.filter((c) => c === 'bzpopmin').length + 2);
      const parked = await app.queue.getResult(runs[2]!.id);
      expect(parked.status).toBe(TaskStatus.READY);
      expect(parked.attempts).toBe(0);
    } finally {
      pool.signal('SIGTERM');
      await pool.waitForExit();
      await app.close();
    }
  });

  it('starts a run at once on a live worker after another idle worker was SIGKILLed', async () => {
    const alias = uniqueAlias('idle');
    const app = await Harness.start({ options: { alias, connection: server.url } });
    const env = { REDIS_URL: server.url, LEASE_TTL_MS: '30000' };
    // The victim works first and waits longest: with direct delivery, its
    // registration was the oldest, the first an enqueue handed a run to.
    const victim = WorkerProcess.start(alias, ['--workers', '1'], env, true);
    let live: WorkerProcess | undefined;
    try {
      await waitUntil('the victim is recorded', async () => (await app.backend.workers()).length === 1);
      const warm = await app.queue.enqueueMany(
        Array.from({ length: 4 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      );
      for (const run of warm) await app.waitFor(run.id);
      live = WorkerProcess.start(alias, ['--workers', '1'], env);
      await waitUntil('both processes are recorded', async () => (await app.backend.workers()).length === 2);
      await delay(300);
      const blocked = async (): Promise<number> =>
        Number(/blocked_clients:(\d+)/.exec(await app.backend.connections.client.info('clients'))![1]);
      // A consumer and a broker per pool wait on Redis.
      await waitUntil('both pools wait on Redis', async () => (await blocked()) === 4);
      victim.signalGroup('SIGKILL');
      await victim.exited;
      // Until Redis has seen the victim's connections close, its waiting claim
      // could still take a run (and give it back uncharged after its lease:
      // docs/storage.md); a registration for direct delivery outlived them.
      await waitUntil("Redis closed the victim's connections", async () => (await blocked()) === 2);
      const enqueuedAt = Date.now();
      const { id } = await app.queue.enqueue('MathService.add', [2, 3]);
      const result = await app.waitFor(id, undefined, 15_000);
      expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1, errors: [], returnValue: 5 });
      // Well within the lease that a run handed to the dead worker would have waited out.
      expect(Date.now() - enqueuedAt).toBeLessThan(10_000);
      expect(result.workerIds[0]!.split(':').at(-2)).not.toBe(String(victim.pid));
    } finally {
      await victim.stop();
      live?.signal('SIGTERM');
      await live?.waitForExit();
      await app.close();
    }
  });
});
