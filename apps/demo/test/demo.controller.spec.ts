// A user's test of their own app: the demo API's batch endpoint, with no Redis at all.
import { ValidationPipe, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DemoTasksModule, SendWelcome } from '@threadmill/demo-tasks';
import { TaskStatus } from '@threadmill/nestjs';
import { ThreadmillTesting, ThreadmillTestingModule, type ThreadmillTestingMode } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DemoAppModule } from '../src/demo-app.module.js';
import { TASKS_CLIENT } from '../src/tasks-client.js';

// The app reads REDIS_URL when its module is imported: a closed port, so
// anything that tried to reach Redis would fail the test.
vi.hoisted(() => {
  process.env['REDIS_URL'] = 'redis://127.0.0.1:1';
});

/** The demo API with its ThreadmillModule replaced, and, for `immediate`, the worker's tasks beside it. */
async function startApi(mode: ThreadmillTestingMode): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [DemoAppModule, ...(mode === 'immediate' ? [DemoTasksModule] : [])],
  })
    .overrideModule(ThreadmillTestingModule.importedBy(DemoAppModule))
    .useModule(ThreadmillTestingModule.forRoot({ mode }))
    // The quote client talks to the worker over Redis too; these tests do not ask for quotes.
    .overrideProvider(TASKS_CLIENT)
    .useValue({ connect: async () => undefined, close: async () => undefined })
    .compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  // As main.ts sets it up.
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }));
  await app.listen(0, '127.0.0.1');
  return app;
}

async function post(app: INestApplication, path: string, body: unknown): Promise<Response> {
  return fetch(`${await app.getUrl()}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('POST /demo/batches', () => {
  let app: INestApplication | undefined;
  afterEach(() => app?.close());

  it('enqueues a welcome email for the first user, with the right arguments', async () => {
    expect(process.env['REDIS_URL']).toBe('redis://127.0.0.1:1');
    app = await startApi('manual');
    const response = await post(app, '/demo/batches', { count: 1 });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ enqueued: 1 });

    const testing = app.get(ThreadmillTesting);
    const welcomes = testing.enqueued(SendWelcome);
    expect(welcomes.map((run) => run.args)).toEqual([[0, 'user0@example.com']]);
    expect(welcomes[0]).toMatchObject({ queue: 'emails', status: TaskStatus.READY });
  });

  it('refuses a bad count and enqueues nothing', async () => {
    app = await startApi('manual');
    expect((await post(app, '/demo/batches', { count: 0 })).status).toBe(400);
    expect(app.get(ThreadmillTesting).enqueued()).toEqual([]);
  });

  it('runs the batch at once with the worker tasks imported, and summarises it', async () => {
    app = await startApi('immediate');
    const { batchId } = (await (await post(app, '/demo/batches', { count: 1 })).json()) as { batchId: string };

    const [welcome] = app.get(ThreadmillTesting).enqueued(SendWelcome);
    expect(welcome).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: { messageId: 'msg-0-17' } });
    const summary = (await (await fetch(`${await app.getUrl()}/demo/batches/${batchId}/summary`)).json()) as {
      byStatus: Record<string, number>;
    };
    expect(summary.byStatus).toEqual({
      WAITING: 0,
      READY: 0,
      RUNNING: 0,
      CANCELLED: 0,
      SUCCESSFUL: 1,
      FAILED: 0,
      QUARANTINED: 0,
    });
  });
});
