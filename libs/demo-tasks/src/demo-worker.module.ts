import { Module } from '@nestjs/common';
import { DemoTasksModule } from './demo-tasks.module.js';
import { QuoteController } from './quote.controller.js';

/**
 * Everything the demo's worker serves: the `@Task()` providers of
 * `DemoTasksModule` and the Nest message handlers of `QuoteController`.
 * The worker application imports it next to `ThreadmillModule`.
 */
@Module({
  imports: [DemoTasksModule],
  controllers: [QuoteController],
  exports: [DemoTasksModule],
})
export class DemoWorkerModule {}
