// The @Task() method run by ThreadmillTestingModule in place of the app's ThreadmillModule: no Redis.
import { Test, type TestingModule } from '@nestjs/testing';
import { TaskQueue, TaskStatus } from '@threadmill/nestjs';
import { ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { GreetService } from './greet.service.js';
import { WorkerModule } from './worker.module.js';

describe('GreetService', () => {
  let moduleRef: TestingModule;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({ imports: [WorkerModule] })
      .overrideModule(ThreadmillTestingModule.importedBy(WorkerModule))
      .useModule(ThreadmillTestingModule.forRoot({ mode: 'immediate' }))
      .compile();
    await moduleRef.init();
  });

  afterEach(() => moduleRef.close());

  it('greets with the DTO rehydrated', async () => {
    const tasks = moduleRef.get(TaskQueue);
    const run = await tasks.enqueue(GreetService, 'greet', ['Grace', { greeting: 'Hi' }]);
    const result = await tasks.getResult(run.id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.returnValue).toBe('Hi, Grace (a GreetingDto)');
  });
});
