import { defineTask } from '@threadmill/nestjs';
import type { Quote, QuoteRequest } from './quote.dto.js';

// The demo's task contracts: what the demo API (a producer) imports to
// enqueue, typed, without the worker's providers. The names are the tasks'
// names from before contracts existed, so runs stored then still run.

/** Sends a welcome email (EmailService). */
export const SendWelcome = defineTask<[userId: number, email: string], { messageId: string }>(
  'EmailService.sendWelcome',
  { queue: 'emails' },
);

/** Charges an invoice through the flaky payment gateway (BillingService). */
export const ChargeInvoice = defineTask<[invoiceId: number, amountCents: number], { chargedCents: number }>(
  'BillingService.charge',
  { queue: 'billing' },
);

/** Builds a report (ReportService). */
export const GenerateReport = defineTask<[reportId: string, rows: number], { reportId: string; digest: string }>(
  'ReportService.generate',
);

/** Pages the on-call engineer, ahead of everything else on its queue (AlertService). */
export const PageOnCall = defineTask<
  [incidentId: number, severity: 'critical' | 'major'],
  { paged: boolean; incidentId: number }
>('AlertService.page', { priority: 50 });

/**
 * Prices a subscription: a request/response call served by the worker's
 * `@MessagePattern('billing.quote')` handler (QuoteController), which must
 * agree with this contract's name and queue or the worker does not boot.
 */
export const RequestQuote = defineTask<[request: QuoteRequest], Quote>('billing.quote', { queue: 'billing' });
