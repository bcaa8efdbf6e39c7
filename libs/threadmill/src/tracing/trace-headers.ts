import { context, propagation } from '@opentelemetry/api';
import { tracerRegistered } from './tracer-registered.js';

/**
 * The trace context of the producer's active span, as the JSON object of
 * headers a run's envelope carries (`traceparent`, `tracestate`: whatever the
 * registered propagator writes), or `undefined` when there is none to carry:
 * no tracer provider registered (then nothing is asked of the propagator and
 * nothing allocated: see `tracerRegistered`), or no span active. One call per
 * enqueue call, however many runs it stores: they share the producer's
 * context.
 */
export function traceHeaders(): string | undefined {
  if (!tracerRegistered()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  for (const _ in carrier) return JSON.stringify(carrier);
  return undefined;
}
