import type { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { FIXTURE_QUEUES } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from './backend.js';

/**
 * Boots an application of `imports` with Threadmill on the test Redis and
 * closes it; resolves with the error its boot failed with, or undefined.
 * @param server serve it with a ThreadmillServer
 * @param threadmill import ThreadmillModule
 */
export async function bootError(
  imports: Type[],
  { server = false, threadmill = true }: { server?: boolean; threadmill?: boolean } = {},
): Promise<unknown> {
  const module = await Test.createTestingModule({
    imports: [
      ...(threadmill
        ? [ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), queues: FIXTURE_QUEUES })]
        : []),
      ...imports,
    ],
  }).compile();
  module.useLogger(false);
  try {
    if (server) {
      const app = module.createNestMicroservice({ strategy: new ThreadmillServer(), logger: false });
      await app.listen();
      await app.close();
    } else {
      await module.init();
      await module.close();
    }
    return undefined;
  } catch (error) {
    await module.close().catch(() => undefined);
    return error;
  }
}
