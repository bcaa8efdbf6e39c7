import { Module } from '@nestjs/common';
import { DemoTasksModule } from './demo-tasks.module.js';
import { QuoteController } from './quote.controller.js';
import { StatsService } from './stats.service.js';

/**
 * Everything the demo's worker serves: the `@Task()` providers of
 * `DemoTasksModule` and the Nest message handlers of `QuoteController`.
 * The worker application imports it next to `ThreadmillModule`.
 */
@Module({
  imports: [DemoTasksModule],
  controllers: [QuoteController],
  providers: [StatsService],
  exports: [DemoTasksModule],
})
export class DemoWorkerModule {}
