import { Test } from '@nestjs/testing';
import { ThreadmillConfigError, ThreadmillModule, ThreadmillWorkerModule } from '@threadmill/nestjs';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';

/** A microservice of the fixture tasks with `workerModule`, served by `server`; closed before it returns. */
async function settingsOf(workerModule: ReturnType<typeof ThreadmillWorkerModule.forRoot>, server: ThreadmillServer) {
  const module = await Test.createTestingModule({
    imports: [
      ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), queues: FIXTURE_QUEUES }),
      FixtureTasksModule,
      workerModule,
    ],
  }).compile();
  const app = module.createNestMicroservice({ strategy: server, logger: ['error'] });
  try {
    await app.listen();
    return server.workerSettings;
  } finally {
    await app.close();
  }
}

describe('ThreadmillWorkerModule', () => {
  it('gives every ThreadmillServer of the app its settings, from forRootAsync and a provider', async () => {
    const settings = await settingsOf(
      ThreadmillWorkerModule.forRootAsync({
        useFactory: async () => ({ concurrency: 3, queues: ['reports'], prefetch: 0, shutdownTimeoutMs: 1_234 }),
      }),
      new ThreadmillServer(),
    );
    expect(settings).toMatchObject({ concurrency: 3, queues: ['reports'], prefetch: 0, shutdownTimeoutMs: 1_234 });
  });

  it("puts the server's own options over the module's, and the module's over the defaults", async () => {
    const settings = await settingsOf(
      ThreadmillWorkerModule.forRoot({ concurrency: 3, queues: ['reports'], shutdownTimeoutMs: 5_000 }),
      new ThreadmillServer({ concurrency: 7, queues: undefined }),
    );
    // queues: undefined leaves the module's; prefetch neither gives: the default (adaptive).
    expect(settings).toMatchObject({ concurrency: 7, queues: ['reports'], shutdownTimeoutMs: 5_000 });
    expect(settings.prefetch).toBeUndefined();
  });

  it('refuses bad settings, naming the field and where they came from', async () => {
    expect(() => ThreadmillWorkerModule.forRoot({ concurrency: 0, connection: 'redis://x' } as never)).toThrow(
      ThreadmillConfigError,
    );
    expect(() => ThreadmillWorkerModule.forRoot({ concurrency: 0 })).toThrow(
      /concurrency: got 0[\s\S]*ThreadmillWorkerModule\.forRoot\(\)/,
    );
    await expect(
      settingsOf(ThreadmillWorkerModule.forRootAsync({ useFactory: () => ({ prefetch: -1 }) }), new ThreadmillServer()),
    ).rejects.toThrow(/prefetch: got -1[\s\S]*ThreadmillWorkerModule\.forRootAsync\(\)/);
  });
});
