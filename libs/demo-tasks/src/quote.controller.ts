import { Controller, ValidationPipe } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { PLAN_PRICES_CENTS, QuoteRequest, type Quote } from './quote.dto.js';

/**
 * Prices subscriptions for senders waiting on the answer
 * (`client.send(RequestQuote, [request])`): a Nest message handler the
 * worker's `ThreadmillServer` serves from the billing queue. A request its
 * pipe rejects ends the run FAILED without a retry, and the sender's
 * Observable errors with the validation message.
 */
@Controller()
export class QuoteController {
  @MessagePattern('billing.quote', { queue: 'billing' })
  quote(@Payload(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true })) request: QuoteRequest): Quote {
    const unitCents = PLAN_PRICES_CENTS[request.plan];
    const volumeDiscount = request.seats >= 100 ? 15 : request.seats >= 20 ? 10 : 0;
    const discountPercent = volumeDiscount + (request.months >= 12 ? 5 : 0);
    const listCents = unitCents * request.seats * request.months;
    return {
      plan: request.plan,
      seats: request.seats,
      months: request.months,
      unitCents,
      discountPercent,
      totalCents: Math.round((listCents * (100 - discountPercent)) / 100),
    };
  }
}
