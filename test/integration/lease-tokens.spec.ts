import { TaskStatus } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

/**
 * A lease token fences every write of its holder. If Redis forgets writes
 * (a restart from an older snapshot or AOF, a failover), a token minted from
 * a counter in Redis is minted again for the same run, and the old holder's
 * outcome passes for the new holder's. Tokens are call ids, which no later
 * call reuses, whatever Redis forgot.
 */
const outcome = (returnValue: string) => ({ kind: 'successful' as const, returnValue });

describe('lease tokens', () => {
  let server: RedisServer | undefined;
  let app: Harness | undefined;
  afterEach(async () => {
    await app?.close();
    await server?.stop();
  });

  it('are never granted twice, even after Redis restarts from an older snapshot', async () => {
    server = await RedisServer.start();
    app = await Harness.start({ options: { connection: server.url, leaseTtlMs: 10_000 } });
    const { backend } = app;
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 2]);
    // The snapshot Redis will restart from: the run READY.
    await backend.connections.client.save();
    const [first] = await backend.claim(['default'], 1, 'host:1:0', 0);
    expect(first!.id).toBe(id);
    await server.kill();
    await server.restart();

    // Redis forgot the claim: the run is READY again, and another worker claims it.
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.READY);
    const [second] = await backend.claim(['default'], 1, 'host:2:0', 0);
    expect(second!.id).toBe(id);
    expect(second!.token).not.toBe(first!.token);
    // The first holder's late outcome is stale; the second holder's applies.
    expect(await backend.acknowledge([{ ...first!, outcome: outcome('"first"') }])).toEqual([false]);
    expect(await backend.acknowledge([{ ...second!, outcome: outcome('3') }])).toEqual([true]);
    expect(await app.queue.getResult(id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 3,
      workerIds: ['host:2:0'],
    });
  });
});
