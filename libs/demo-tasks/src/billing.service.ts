import { Injectable } from '@nestjs/common';
import { ExponentialBackoff, Task, TaskContext } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { ChargeInvoice } from './contracts.js';

/** The payment provider's answer when it is briefly unavailable. */
export class PaymentGatewayError extends Error {}

/** The payment provider's answer for a card that will never go through. */
export class CardDeclinedError extends Error {}

/**
 * Charges invoices through a flaky payment gateway: about a third of charges
 * hit a transient error on their first attempt and succeed on a retry; one in
 * twenty cards is declined, which no retry fixes.
 */
@Injectable()
export class BillingService {
  @Task(ChargeInvoice, {
    retry: new ExponentialBackoff({ baseDelayMs: 250, maxRetries: 4, retryOn: [PaymentGatewayError] }),
  })
  async charge(invoiceId: number, amountCents: number, context: TaskContext): Promise<{ chargedCents: number }> {
    await delay(2, undefined, { signal: context.signal });
    if (invoiceId % 20 === 7) throw new CardDeclinedError(`Card declined for invoice ${invoiceId}`);
    if (invoiceId % 3 === 0 && context.attempt === 1) {
      throw new PaymentGatewayError(`Gateway timeout charging invoice ${invoiceId}`);
    }
    return { chargedCents: amountCents };
  }
}
