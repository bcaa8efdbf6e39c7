export { AlertService } from './alert.service.js';
export { BillingService, CardDeclinedError, PaymentGatewayError } from './billing.service.js';
export { demoBackendOptions } from './demo-backend.js';
export { DEMO_QUEUES } from './demo-queues.js';
export { DemoTasksModule } from './demo-tasks.module.js';
export { EmailService } from './email.service.js';
export { ReportService } from './report.service.js';
