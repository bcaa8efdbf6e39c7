import { Type } from 'class-transformer';
import { IsIn, IsInt, Max, Min } from 'class-validator';

/** The plans a quote prices, with their price per seat and month. */
export const PLAN_PRICES_CENTS = { starter: 800, team: 1_500, enterprise: 4_000 } as const;

export type Plan = keyof typeof PLAN_PRICES_CENTS;

/**
 * What a quote asks for. The demo API validates it from the query string
 * (`@Type` turns its text into numbers) and the worker's handler validates
 * it again: any producer can send to the handler's queue.
 */
export class QuoteRequest {
  @IsIn(Object.keys(PLAN_PRICES_CENTS))
  plan!: Plan;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(10_000)
  seats!: number;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(36)
  months!: number;
}

/** A priced quote, as the handler returns it to the sender. */
export interface Quote {
  readonly plan: Plan;
  readonly seats: number;
  readonly months: number;
  readonly unitCents: number;
  readonly discountPercent: number;
  readonly totalCents: number;
}
