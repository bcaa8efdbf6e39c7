import { Module } from '@nestjs/common';
import { AlertService } from './alert.service.js';
import { BillingService } from './billing.service.js';
import { EmailService } from './email.service.js';
import { ReportService } from './report.service.js';

/**
 * The demo's task providers. Both the demo API (which enqueues) and the
 * worker app (which runs them) import this module: producers need the task
 * declarations to validate and route what they enqueue.
 */
@Module({
  providers: [AlertService, BillingService, EmailService, ReportService],
  exports: [AlertService, BillingService, EmailService, ReportService],
})
export class DemoTasksModule {}
