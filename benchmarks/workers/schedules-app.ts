import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { Task, ThreadmillModule } from '@threadmill/nestjs';

/** The task `docs/schedules.md`'s one-schedule-per-tenant example schedules: each run does nothing. */
@Injectable()
class TenantReports {
  @Task({ name: 'reports.refresh', queue: 'bench' })
  refresh(tenant: string): void {
    void tenant;
  }
}

@Module({})
class SchedulesAppModule {}

/** The application of `tools/schedules-scale.ts`: its producer makes the schedules, its pool fires them. */
export function schedulesApp(url: string): DynamicModule {
  return {
    module: SchedulesAppModule,
    imports: [ThreadmillModule.forRoot({ connection: url, alias: 'sched', queues: ['bench'] })],
    providers: [TenantReports],
  };
}
