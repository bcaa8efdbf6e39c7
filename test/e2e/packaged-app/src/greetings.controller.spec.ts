// The @MessagePattern handler run by ThreadmillTestingModule through its pipe, as a worker runs it: no Redis.
import { Test, type TestingModule } from '@nestjs/testing';
import { TaskQueue, TaskStatus } from '@threadmill/nestjs';
import { ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { GreetingsModule } from './greetings.module.js';

describe('GreetingsController', () => {
  let moduleRef: TestingModule;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ThreadmillTestingModule.forRoot({ mode: 'immediate' }), GreetingsModule],
    }).compile();
    await moduleRef.init();
  });

  afterEach(() => moduleRef.close());

  it('shouts', async () => {
    const tasks = moduleRef.get(TaskQueue);
    const run = await tasks.enqueue('greetings.shout', [{ text: 'hello' }]);
    const result = await tasks.getResult(run.id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.returnValue).toBe('HELLO!');
  });

  it('refuses an empty text without retrying it', async () => {
    const tasks = moduleRef.get(TaskQueue);
    const run = await tasks.enqueue('greetings.shout', [{ text: '' }]);
    const result = await tasks.getResult(run.id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
  });
});
