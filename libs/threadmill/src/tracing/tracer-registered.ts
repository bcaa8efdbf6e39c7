import { ProxyTracerProvider, trace, type TracerProvider } from '@opentelemetry/api';

/**
 * The API's no-op provider: what its global proxy delegates to while no SDK
 * registered a provider (a fresh proxy has no delegate, and answers it).
 */
const NOOP_PROVIDER: TracerProvider = new ProxyTracerProvider().getDelegate();

/**
 * Whether an application registered a tracer provider with
 * `@opentelemetry/api` (an SDK's `register()` or `NodeSDK.start()`): without
 * one every span is the API's no-op, so Threadmill skips spans and trace
 * headers altogether. A provider the API does not wrap in its own proxy
 * (another copy of the API registered it) counts as registered: Threadmill
 * then asks its spans whether they record, as it would anyway.
 */
export function tracerRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}
