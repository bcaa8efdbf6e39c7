// @threadmill/nestjs/testing as installed from the tarball: RedisServer, and the
// app's module booted with its ThreadmillModule replaced by the testing module.
import { Test } from '@nestjs/testing';
import { TaskQueue } from '@threadmill/nestjs';
import { RedisServer, ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { AppModule, GreetService } from './app.module.js';

const server = await RedisServer.start();
const client = new Redis(server.url);
const pong = await client.ping();
client.disconnect();
await server.stop();

const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
  .overrideModule(ThreadmillTestingModule.importedBy(AppModule))
  .useModule(ThreadmillTestingModule.forRoot({ mode: 'immediate' }))
  .compile();
await moduleRef.init();
const run = await moduleRef.get(TaskQueue).enqueue(GreetService, 'greet', ['Grace', { greeting: 'Hi' }]);
const { status, returnValue } = await moduleRef.get(TaskQueue).getResult(run.id);
await moduleRef.close();

console.log(JSON.stringify({ redis: pong, immediate: { status, returnValue } }));
