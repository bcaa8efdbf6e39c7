import { Module } from '@nestjs/common';
import { AlertService } from './alert.service.js';
import { BillingService } from './billing.service.js';
import { EmailService } from './email.service.js';
import { ReportService } from './report.service.js';

/**
 * The demo's task providers, whose `@Task()` methods run the contracts of
 * `contracts.ts`. Only a worker imports them (through `DemoWorkerModule`):
 * producers enqueue through the contracts and need none of this code.
 */
@Module({
  providers: [AlertService, BillingService, EmailService, ReportService],
  exports: [AlertService, BillingService, EmailService, ReportService],
})
export class DemoTasksModule {}
