// Threadmill and the module whose task and handler the worker runs; the producer boots it too.
import { Module } from '@nestjs/common';
import { ThreadmillModule } from '@threadmill/nestjs';
import { GreetingsModule } from './greetings.module.js';

@Module({
  imports: [
    ThreadmillModule.forRoot({
      connection: process.env['REDIS_URL'],
      alias: process.env['THREADMILL_ALIAS'],
      queues: ['default'],
    }),
    GreetingsModule,
  ],
})
export class WorkerModule {}
